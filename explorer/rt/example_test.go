package rt_test

import (
	"fmt"

	"github.com/protocheck/protocheck/explorer/rt"
)

// Two goroutines increment a shared counter with a load and a store; a
// third joins them and checks the total. DFS finds the lost update with
// one preemption, and the schedule replays it.
func Example() {
	body := func(e *rt.Env) {
		count := e.Word64("count")
		inc := func() {
			v := count.Load("counter_inc: load")
			count.Store("counter_inc: store", v+1)
		}
		a, b := e.Go("A", inc), e.Go("B", inc)
		e.Go("check", func() {
			a.Join("check: join A")
			b.Join("check: join B")
			if v := count.Load("check: load count"); v != 2 {
				e.Failf("no-lost-update", "both increments done but count=%d", v)
			}
		})
	}
	sum, err := rt.Explore(rt.DFS(1), 1000, 100, body)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sum)
	fmt.Print(sum.Failure)

	again := rt.Controlled(rt.Replay(sum.Failure.Schedule), 100, body)
	fmt.Println("replay:", again.Outcome())
	// Output:
	// dfs(preemptions=1): 4 runs; violation: no-lost-update: both increments done but count=1
	// violation: no-lost-update: both increments done but count=1 after 7 steps (dfs(preemptions=1))
	// goroutines: 0=A 1=B 2=check
	// schedule: 0 1 1 0 2 2 2
	//    1. 0      A counter_inc: load
	//    2. 1      B counter_inc: load
	//    3. 1      B counter_inc: store
	//    4. 0      A counter_inc: store
	//    5. 2      check check: join A
	//    6. 2      check check: join B
	//    7. 2      check check: load count
	// replay: violation: no-lost-update: both increments done but count=1
}
