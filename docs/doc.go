// Package docs holds protocheck's documentation: the Markdown pages in
// this directory (one per protocol, the command line, exploration at
// scale, performance, the library, and check-a-patch.md, the guide from a
// patch to a verdict). It has no code of its own. Its test runs every
// command of check-a-patch.md through the cli package, as `go run
// ./cmd/check` would, and checks the exit status and the output the guide
// shows, and that the Go code the guide quotes is in the file it names:
// the guide cannot fall behind the code without `go test ./...` failing.
package docs
