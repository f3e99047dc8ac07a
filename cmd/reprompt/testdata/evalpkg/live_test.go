//go:build live

package evalpkg

// live is the build: -tags live or not.
const live = true
