package auth

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"
)

// A token endpoint at a wrong URL — nothing there (404), a page that is
// not a token response, no server answering — is told as a URL to check,
// not as a transient failure to wait out.
func TestAWrongTokenURLIsToldAsOneToCheck(t *testing.T) {
	noHost := &url.Error{Op: "Post", URL: "https://api.x.cmo/2/oauth2/token", Err: &net.DNSError{Err: "no such host", Name: "api.x.cmo", IsNotFound: true}}
	for name, err := range map[string]error{
		"404":              &oauth2.RetrieveError{Response: &http.Response{StatusCode: 404}},
		"a page, not JSON": &oauth2.RetrieveError{Response: &http.Response{StatusCode: 200}, ErrorCode: "server_error"},
		"no such host":     noHost,
	} {
		msg := tokenEndpointError("refresh", err).Error()
		if !strings.Contains(msg, "oauth.token_url in a spec") || strings.Contains(msg, "try again later") {
			t.Errorf("%s: %q", name, msg)
		}
	}
	if msg := tokenEndpointError("refresh", &oauth2.RetrieveError{Response: &http.Response{StatusCode: 503}}).Error(); !strings.Contains(msg, "transient") {
		t.Errorf("503: %q", msg)
	}
	if !errors.Is(tokenEndpointError("refresh", &oauth2.RetrieveError{Response: &http.Response{StatusCode: 400}, ErrorCode: "invalid_grant"}), ErrLoginRequired) {
		t.Error("invalid_grant is no longer a login required")
	}
}
