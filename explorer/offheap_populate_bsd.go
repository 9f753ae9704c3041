//go:build darwin || freebsd

package explorer

// populate: these systems have no MAP_POPULATE; pages are mapped on
// first touch.
const populate = 0
