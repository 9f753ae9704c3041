package rt

import (
	"fmt"
	"math/rand/v2"

	"github.com/protocheck/protocheck/model"
)

// Random returns a strategy that picks every step uniformly among the
// enabled choices. Run i (0-based, counting the runs this strategy value
// has begun) draws from a generator seeded with (seed, i), as the model
// explorer's random walks do, so every run is reproducible on its own.
func Random(seed int64) Strategy {
	r := &randomStrategy{seed: seed, pcg: rand.NewPCG(0, 0)}
	r.rng = rand.New(r.pcg)
	return r
}

type randomStrategy struct {
	seed int64
	run  uint64
	pcg  *rand.PCG
	rng  *rand.Rand
}

func (r *randomStrategy) Begin() error {
	r.pcg.Seed(uint64(r.seed), r.run)
	r.run++
	return nil
}

func (r *randomStrategy) Pick(p *Point) (model.Choice, error) {
	return p.Enabled[r.rng.IntN(len(p.Enabled))], nil
}

func (r *randomStrategy) End(*Run) error { return nil }

func (r *randomStrategy) String() string { return fmt.Sprintf("random(seed=%d)", r.seed) }
