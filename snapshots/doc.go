// Package snapshots is test support for prompts: a scripted model that
// answers from a list of replies and records every request, so a prompt
// function can be run offline and its requests asserted on.
//
// Nothing in the library imports snapshots; tests and examples do.
package snapshots
