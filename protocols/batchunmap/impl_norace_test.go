//go:build !race

package batchunmap

const raceEnabled = false
