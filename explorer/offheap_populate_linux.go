package explorer

import "syscall"

// populate asks Linux to map an allocation's pages when it is made
// (MAP_POPULATE). See allocWords.
const populate = syscall.MAP_POPULATE
