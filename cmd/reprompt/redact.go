package main

import (
	"net/url"
	"regexp"
	"strings"
)

// A store's URL may hold credentials in several places, each of which
// redact hides:
//
//	postgres://user:PASSWORD@host/db                 (userinfo; any scheme)
//	postgres://user@host/db?password=PASSWORD         (a query parameter)
//	host=h user=u password='PASSWORD' sslpassword=…   (keyword/value form)
//
// A parameter is a credential when its name contains pass (password,
// sslpassword, passfile: the path of a password file), pwd, secret,
// token (access_token), key (sslkey, api_key), auth or credential.
var (
	// userinfoRE matches the userinfo of a URL inside a longer text, up to
	// its first "@"; a password that holds a raw "@" is also scrubbed as a
	// literal (scrub).
	userinfoRE = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^\s/:@]*):[^\s@]*@`)
	// paramRE matches a credential parameter, in a query (?k=v&…) or in
	// the keyword/value form (k=v k='v w'), with its value.
	paramRE = regexp.MustCompile(`(?i)\b([a-z0-9_]*(?:pass|pwd|secret|token|key|auth|credential)[a-z0-9_]*)(\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)`)
)

// redacted replaces a credential.
const redacted = "***"

// redact returns the store spec with its credentials hidden, for every
// output that names the store: the page's source line, show's header,
// error messages.
func redact(spec string) string {
	if i := strings.Index(spec, "://"); i >= 0 {
		rest := spec[i+3:]
		end := len(rest)
		if q := strings.IndexAny(rest, "?#"); q >= 0 {
			end = q
		}
		// The userinfo ends at the last "@" of the authority: a password
		// may hold a raw "@" or "/".
		if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
			if user, _, ok := strings.Cut(rest[:at], ":"); ok {
				rest = user + ":" + redacted + rest[at:]
			}
		}
		spec = spec[:i+3] + rest
	}
	return paramRE.ReplaceAllString(spec, "$1$2"+redacted)
}

// scrub returns text, an error message or a page that may quote the store
// spec or parts of it (a driver's message), with every credential hidden:
// those redact finds in the text, and each credential of spec, as given
// and decoded, wherever it appears (values shorter than 4 bytes only
// where redact finds them, lest common words be hidden).
func scrub(text, spec string) string {
	for _, s := range secrets(spec) {
		if len(s) >= 4 {
			text = strings.ReplaceAll(text, s, redacted)
		}
	}
	text = userinfoRE.ReplaceAllString(text, "$1:"+redacted+"@")
	return paramRE.ReplaceAllString(text, "$1$2"+redacted)
}

// secrets returns the credentials of a store spec, each as given and, when
// different, decoded.
func secrets(spec string) []string {
	var out []string
	add := func(s string) {
		s = strings.Trim(s, "'")
		out = append(out, s)
		if d, err := url.PathUnescape(s); err == nil && d != s {
			out = append(out, d)
		}
		if d, err := url.QueryUnescape(s); err == nil && d != s {
			out = append(out, d)
		}
	}
	if i := strings.Index(spec, "://"); i >= 0 {
		rest := spec[i+3:]
		end := len(rest)
		if q := strings.IndexAny(rest, "?#"); q >= 0 {
			end = q
		}
		if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
			if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
				add(pw)
			}
		}
	}
	for _, m := range paramRE.FindAllStringSubmatch(spec, -1) {
		add(m[3])
	}
	return out
}
