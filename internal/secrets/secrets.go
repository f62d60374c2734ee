// Package secrets keeps credentials out of the text the program prints and
// stores: a server may echo what it was sent (a token, a Basic header) in
// an error, which ends in logs, x_api_usage.failure and the exporter's
// summary. A Mask holds every credential the process holds or receives.
package secrets

import (
	"cmp"
	"encoding/base64"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Hidden replaces a credential (as package auth masks the secrets of its
// own messages).
const Hidden = "[redacted]"

// MinLength is the shortest value masked. Real credentials are tens of
// characters; masking every occurrence of a short value ("t", a test token)
// would mangle the messages it appears in and protect nothing.
const MinLength = 8

// Mask replaces the credentials it was given in any text. The zero value
// holds none; a nil *Mask leaves text as it is. Safe for concurrent use.
type Mask struct {
	mu       sync.Mutex
	secrets  map[string]struct{}
	replacer *strings.Replacer // of secrets
}

func New(secrets ...string) *Mask {
	r := &Mask{}
	r.Add(secrets...)
	return r
}

// Add adds credentials, as they are and as they look in a URL query or
// form body. Values shorter than MinLength are ignored.
func (r *Mask) Add(secrets ...string) {
	var forms []string
	for _, s := range secrets {
		forms = append(forms, s, url.QueryEscape(s))
	}
	r.add(forms)
}

// AddBasic adds the credentials of HTTP Basic authentication with clientID
// and secret: the secret, and the header's base64 value as clients encode it
// (golang.org/x/oauth2 form-escapes both parts first, RFC 6749 2.3.1).
func (r *Mask) AddBasic(clientID, secret string) {
	if secret == "" {
		return
	}
	r.Add(secret)
	r.add([]string{
		base64.StdEncoding.EncodeToString([]byte(clientID + ":" + secret)),
		base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(clientID) + ":" + url.QueryEscape(secret))),
	})
}

func (r *Mask) add(values []string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.secrets == nil {
		r.secrets = map[string]struct{}{}
	}
	known := len(r.secrets)
	for _, v := range values {
		if len(v) >= MinLength {
			r.secrets[v] = struct{}{}
		}
	}
	if len(r.secrets) == known {
		return
	}
	// Longest first: a secret inside another (a client secret inside the
	// decoded Basic value) must not leave the rest of the longer one behind.
	var pairs []string
	for _, s := range slices.SortedFunc(maps.Keys(r.secrets), func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b)) }) {
		pairs = append(pairs, s, Hidden)
	}
	r.replacer = strings.NewReplacer(pairs...)
}

func (r *Mask) String(s string) string {
	if r == nil {
		return s
	}
	r.mu.Lock()
	rep := r.replacer
	r.mu.Unlock()
	if rep == nil {
		return s
	}
	return rep.Replace(s)
}

// Strings redacts each element of ss in place and returns it.
func (r *Mask) Strings(ss []string) []string {
	for i, s := range ss {
		ss[i] = r.String(s)
	}
	return ss
}

// Error returns err with its text redacted: Error() gives err's message
// without credentials, and errors.Is and errors.As still see err. Code that
// takes a wrapped error out with errors.As and prints it must redact that
// text itself. nil stays nil.
func (r *Mask) Error(err error) error {
	if err == nil || r == nil {
		return err
	}
	if re, ok := err.(*redactedError); ok && re.r == r {
		return err
	}
	return &redactedError{r: r, err: err}
}

type redactedError struct {
	r   *Mask
	err error
}

// Error is redacted when it is asked for, so that a credential learnt after
// the error was made (a token refreshed meanwhile) is masked too.
func (e *redactedError) Error() string { return e.r.String(e.err.Error()) }
func (e *redactedError) Unwrap() error { return e.err }
