package httpwait

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"syscall"
)

// Transient reports whether err, an error that came with no HTTP status,
// is worth a retry: a dropped or refused connection, a timeout or a
// truncated body. A bad certificate, an unknown host or an unsupported
// scheme are not, although they wear net.Error too.
func Transient(err error) bool {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var ue x509.UnknownAuthorityError
	var he x509.HostnameError
	var ce *tls.CertificateVerificationError
	var de *net.DNSError
	if errors.As(err, &ue) || errors.As(err, &he) || errors.As(err, &ce) || (errors.As(err, &de) && de.IsNotFound) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe) && (oe.Op == "dial" || oe.Op == "read" || oe.Op == "write")
}
