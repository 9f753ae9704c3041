package cputlb

import "flag"

var runMatrix = flag.Bool("matrix", false, "explore the heavy configurations: the default size of the correct variants (a minute on two cores)")
