package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sqlite"
)

func TestRedact(t *testing.T) {
	for _, tt := range []struct{ spec, want string }{
		{"sqlite:/tmp/s.db", "sqlite:/tmp/s.db"},
		{"postgres://me@host/db", "postgres://me@host/db"},
		{"postgres://me:s3cretpw@host/db", "postgres://me:***@host/db"},
		{"postgresql://me:s3cretpw@host:5432/db?sslmode=disable", "postgresql://me:***@host:5432/db?sslmode=disable"},
		{"postgres://me@host/db?password=s3cretpw", "postgres://me@host/db?password=***"},
		{"postgres://me@host/db?sslmode=require&sslpassword=s3cretpw&x=1", "postgres://me@host/db?sslmode=require&sslpassword=***&x=1"},
		{"postgres://me@host/db?passfile=/home/me/s3cretpw", "postgres://me@host/db?passfile=***"},
		{"postgres://me:p%40ss%2Fs3cretpw@host/db", "postgres://me:***@host/db"},
		{"postgres://me:p@ss/s3cretpw@host/db", "postgres://me:***@host/db"},
		{"postgres://me@host/db?access_token=s3cretpw", "postgres://me@host/db?access_token=***"},
		{"postgres://me@host/db?PASSWORD=s3cretpw", "postgres://me@host/db?PASSWORD=***"},
		{"host=h user=me password=s3cretpw dbname=x", "host=h user=me password=*** dbname=x"},
		{"host=h password = 's3 cretpw' dbname=x", "host=h password = *** dbname=x"},
		{"mysql://me:s3cretpw@host/db", "mysql://me:***@host/db"},
	} {
		assert.Equal(t, tt.want, redact(tt.spec), "redact(%q)", tt.spec)
	}
}

func TestScrub(t *testing.T) {
	spec := "postgres://me:p@ss/s3cretpw@host/db?sslpassword=k3yk3yk3y"
	msg := `failed to connect to postgres://me:p@ss/s3cretpw@host/db: bad password "p@ss/s3cretpw", key k3yk3yk3y`
	got := scrub(msg, spec)
	assert.NotContains(t, got, "s3cretpw")
	assert.NotContains(t, got, "k3yk3yk3y")
	assert.Equal(t, `failed to connect to postgres://me:***@host/db: bad password "***", key ***`, got)
}

// credentialForms are store URLs that carry the credential "s3cretpw" in
// each place a PostgreSQL URL can hold one.
var credentialForms = []string{
	"postgres://me:s3cretpw@127.0.0.1:1/db?connect_timeout=2",
	"postgresql://me:s3cretpw@127.0.0.1:1/db?sslmode=disable&connect_timeout=2",
	"postgres://me@127.0.0.1:1/db?password=s3cretpw&connect_timeout=2",
	"postgres://me@127.0.0.1:1/db?connect_timeout=2&sslmode=disable&sslpassword=s3cretpw",
	"postgres://me@127.0.0.1:1/db?connect_timeout=2&passfile=/home/me/s3cretpw",
	"postgres://me:p%40ss%2Fs3cretpw@127.0.0.1:1/db?connect_timeout=2",
	"postgres://me:p@ss:s3cretpw@127.0.0.1:1/db?connect_timeout=2",
	"postgres://me@127.0.0.1:1/db?connect_timeout=2&PassWord=s3cretpw",
}

// TestNoCredentialShown names a store by URLs that carry a credential, in
// every form, and checks every output that names the store: show's header,
// the page view writes (its source line), the unknown-session error of
// show and of send, the error of a store that cannot be reached, and a
// store spec that is not understood.
func TestNoCredentialShown(t *testing.T) {
	path := newStore(t)
	dir := t.TempDir() // not the subtests': their names hold the credential
	for i, spec := range credentialForms {
		t.Run(spec, func(t *testing.T) {
			check := func(what, text string) {
				t.Helper()
				for _, secret := range []string{"s3cretpw", "p%40ss"} {
					if i := strings.Index(text, secret); i >= 0 {
						assert.Fail(t, "credential shown", "%s shows %q: …%s…", what, secret, text[max(0, i-80):min(len(text), i+40)])
					}
				}
			}
			// The real driver, which cannot connect.
			code, out, errs := cli(t, "--store", spec, "sessions")
			assert.Equal(t, 1, code, errs)
			assert.Contains(t, errs, "cannot be reached")
			check("the error of a store that cannot be reached", out+errs)

			// The same URL, opened as a store that holds session "count".
			openPostgres = func(ctx context.Context, url string) (session.Store, func(), error) {
				st, err := sqlite.Open(path)
				if err != nil {
					return nil, nil, err
				}
				return st, func() { _ = st.Close() }, nil
			}
			defer func() { openPostgres = realOpenPostgres }()
			code, out, errs = cli(t, "--store", spec, "show", "count")
			require.Equal(t, 0, code, errs)
			assert.Contains(t, out, "count (session store postgres")
			check("show's header", out+errs)
			page := filepath.Join(dir, fmt.Sprintf("count%d.html", i))
			code, out, errs = cli(t, "--store", spec, "view", "count", "-o", page)
			require.Equal(t, 0, code, errs)
			data, err := os.ReadFile(page)
			require.NoError(t, err)
			assert.Contains(t, string(data), `"source":"session store postgres`)
			check("the page", string(data)+out+errs)
			code, out, errs = cli(t, "--store", spec, "show", "nope")
			assert.Equal(t, 1, code)
			assert.Contains(t, errs, `unknown session "nope" in postgres`)
			check("show's unknown-session error", out+errs)
			code, out, errs = cli(t, "--store", spec, "send", "nope", "hello")
			assert.Equal(t, 1, code)
			check("send's unknown-session error", out+errs)
		})
	}
	for _, spec := range []string{"host=h user=me password=s3cretpw", "mysql://me:s3cretpw@h/db", "host=h password='s3cretpw x'"} {
		code, out, errs := cli(t, "--store", spec, "sessions")
		assert.Equal(t, 2, code, errs)
		assert.NotContains(t, out+errs, "s3cretpw", "the usage error of store %q", spec)
	}
}

var realOpenPostgres = openPostgres
