package httpwait_test

import (
	"context"
	"crypto/x509"
	"net"
	"net/url"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/reprompt/reprompt/internal/httpwait"
)

func TestTransient(t *testing.T) {
	post := func(err error) error { return &url.Error{Op: "Post", URL: "https://example.invalid/v1", Err: err} }
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"refused", post(&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}), true},
		{"reset", post(&net.OpError{Op: "read", Err: syscall.ECONNRESET}), true},
		{"timeout", post(&net.OpError{Op: "dial", Err: context.DeadlineExceeded}), true},
		{"bad certificate", post(x509.UnknownAuthorityError{}), false},
		{"unknown host", post(&net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}}), false},
		{"unsupported scheme", post(&url.Error{Op: "Post", URL: "ftp://x", Err: net.UnknownNetworkError("ftp")}), false},
	} {
		got := httpwait.Transient(tc.err)
		assert.Equal(t, tc.want, got, "%s: Transient = %v, want %v", tc.name, got, tc.want)
	}
}
