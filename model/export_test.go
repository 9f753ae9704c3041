package model

// WithARMv8NoPromisesUncompacted is WithARMv8NoPromises that keeps every
// message: the reference its compaction is tested against.
func WithARMv8NoPromisesUncompacted(m Machine, mem func(State) *Mem) Machine {
	a := WithARMv8NoPromises(m, mem).(*armMachine)
	a.keepAll = true
	return a
}
