package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/protocheck/protocheck/litmus"
)

// litmusCmd runs litmus tests (the C format of the kernel's
// tools/memory-model and herdtools7, and herdtools7's AArch64 format)
// under a memory model and prints each test's outcomes and whether its
// condition is observable. It exits 0 when every test ran to the end
// (whatever its condition), 2 on a file that cannot be read or parsed
// (the message names the file and line), 3 when --max-states cut a search
// short.
func (c *command) litmus(args []string) (int, error) {
	fs := c.newFlags("litmus", "litmus [--model sc|tso|armv8] [--max-states N] FILE ...")
	mm := fs.String("model", "armv8", "memory model: sc, tso or armv8")
	maxStates := fs.Int("max-states", 0, "stop a test's search after this many states (0: no limit; the verdict is then not a proof)")
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage, err
	}
	if len(pos) == 0 {
		return ExitUsage, usagef("litmus: no file")
	}
	switch *mm {
	case "sc", "tso", "armv8":
	default:
		return ExitUsage, usagef("--model %s: sc, tso or armv8", clip(*mm))
	}
	if *maxStates < 0 {
		return ExitUsage, usagef("--max-states %d: must not be negative", *maxStates)
	}
	code := ExitOK
	for i, file := range pos {
		data, err := os.ReadFile(file)
		if err != nil {
			return ExitUsage, err
		}
		t, err := litmus.Parse(file, data)
		if err != nil {
			return ExitUsage, err
		}
		r, err := litmus.Run(t, *mm, *maxStates)
		if err != nil {
			return ExitUsage, errors.New(file + ": " + err.Error())
		}
		if i > 0 {
			fmt.Fprintln(c.stdout)
		}
		fmt.Fprint(c.stdout, r.Format())
		if r.Bounded {
			code = ExitIncomplete
		}
		if c.interrupted() {
			return ExitInterrupted, nil
		}
	}
	return code, nil
}
