//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package sqlite

// fileLock is not available here: writers wait on SQLite's lock alone.
type fileLock struct{}

func openFileLock(string) (*fileLock, bool) { return nil, false }
func (*fileLock) lock() error               { return nil }
func (*fileLock) unlock() error             { return nil }
func (*fileLock) close() error              { return nil }
