//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package sqlite

import (
	"os"
	"syscall"
)

// fileLock is an exclusive flock(2) lock of the file path+"-writer" (made
// if missing), for writers to queue on in the kernel: a waiter sleeps
// until the holder releases it, then the waiters race for it afresh,
// however long each waited. ok is false when the file cannot be opened (a
// read-only directory): then writers wait on SQLite's lock alone.
type fileLock struct {
	f *os.File
}

func openFileLock(path string) (*fileLock, bool) {
	f, err := os.OpenFile(path+"-writer", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false
	}
	return &fileLock{f: f}, true
}

// lock blocks until it holds the lock.
func (l *fileLock) lock() error {
	for {
		err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}

func (l *fileLock) unlock() error { return syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN) }

func (l *fileLock) close() error { return l.f.Close() }
