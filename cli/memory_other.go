//go:build !linux

package cli

// physicalMemory is unknown here: no default memory limit.
func physicalMemory() int64 { return 0 }
