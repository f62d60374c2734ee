package secrets

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestEveryFormOfACredentialIsMasked(t *testing.T) {
	const (
		token  = "AAAAAAAAAAAAAAAAAAAAAMLheAAAAAAA0%2BuSeid%2BULvsea4JtiGRiSDSJSI%3DEUifiRBkKG5E2XzMDjRfl76ZC9Ub0wnz4XsNiRVBChTYbJcE3F"
		secret = "s3cr3t+/with=odd&chars"
		id     = "client id:42"
	)
	r := New(token)
	r.AddBasic(id, secret)
	basic := base64.StdEncoding.EncodeToString([]byte(id + ":" + secret))
	escapedBasic := base64.StdEncoding.EncodeToString([]byte("client+id%3A42:s3cr3t%2B%2Fwith%3Dodd%26chars"))
	for _, leak := range []string{
		token, "Bearer " + token, "access_token=" + strings.ReplaceAll(token, "%", "%25"),
		secret, id + ":" + secret, "Basic " + basic, "Basic " + escapedBasic, "client_secret=s3cr3t%2B%2Fwith%3Dodd%26chars",
	} {
		got := r.String("the server said: " + leak + " (twice: " + leak + ")")
		for _, part := range []string{token, secret, basic, escapedBasic, "s3cr3t%2B%2Fwith%3Dodd%26chars"} {
			if strings.Contains(got, part) {
				t.Errorf("%q leaks %q: %q", leak, part, got)
			}
		}
		if !strings.Contains(got, Hidden) || !strings.HasPrefix(got, "the server said: ") {
			t.Errorf("%q: %q", leak, got)
		}
	}
}

func TestShortValuesAreNotCredentials(t *testing.T) {
	r := New("t", "abc", "")
	if got := r.String("the token was rejected"); got != "the token was rejected" {
		t.Errorf("%q", got)
	}
}

func TestANilRedactorLeavesTextAlone(t *testing.T) {
	var r *Mask
	r.Add("a-long-secret-value")
	err := errors.New("x")
	if r.String("a-long-secret-value") != "a-long-secret-value" || r.Error(err) != err || r.Error(nil) != nil {
		t.Error("a nil Mask changed something")
	}
}

// An error keeps what errors.Is and errors.As see, and its text is masked
// with what the Mask holds when the text is asked for.
func TestErrorsAreMaskedWhenPrinted(t *testing.T) {
	r := New()
	inner := fmt.Errorf("401: echoed refreshed-token-0123456789: %w", io.ErrUnexpectedEOF)
	err := r.Error(inner)
	r.Add("refreshed-token-0123456789")
	if got := err.Error(); got != "401: echoed "+Hidden+": unexpected EOF" {
		t.Errorf("%q", got)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) || errors.Unwrap(err) != inner {
		t.Error("the wrapped error is not reachable")
	}
	if r.Error(err) != err {
		t.Error("wrapped twice")
	}
}
