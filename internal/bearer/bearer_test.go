package bearer

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Plain http carries a credential to a loopback host only.
func TestOnlyALoopbackHostIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{"localhost": true, "LocalHost": true, "127.0.0.1": true, "127.8.0.1": true, "::1": true,
		"0.0.0.0": false, "": false, "api.x.com": false, "10.0.0.1": false, "localhost.example": false} {
		if got := Loopback(host); got != want {
			t.Errorf("Loopback(%q) = %v", host, got)
		}
	}
}

// The token goes in the header of the request sent, not of the caller's,
// and not into what prints the transport; a 401 is sent again once with
// the renewed token.
func TestTheTokenGoesInTheHeaderAndIsRenewedOnceOn401(t *testing.T) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get("Authorization"))
		if r.Header.Get("Authorization") != "Bearer tok-renewed" {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	tr := &Transport{
		Token: func(context.Context) (string, error) { return "tok-old", nil },
		Renew: func(_ context.Context, refused string) (string, error) { return "tok-renewed", nil },
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := tr.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Request != req || req.Header.Get("Authorization") != "" {
		t.Fatalf("status %v, err %v; the caller's request has %q", resp, err, req.Header.Get("Authorization"))
	}
	if strings.Join(seen, ",") != "Bearer tok-old,Bearer tok-renewed" {
		t.Errorf("sent %v", seen)
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if s := fmt.Sprintf(verb, tr); strings.Contains(s, "tok-") {
			t.Errorf("%s prints the token: %s", verb, s)
		}
	}
}

// A URL a credential is sent to is absolute, https or plain http to a
// loopback host, and has no user info, query, fragment nor white space; its
// errors never repeat a password.
func TestCheckURL(t *testing.T) {
	for _, ok := range []string{"https://api.x.com", "https://api.x.com:8443/prefix/", "http://127.0.0.1:8080", "http://localhost"} {
		if _, err := CheckURL(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for bad, want := range map[string]string{
		"api.x.com": "not an absolute", "ftp://api.x.com": "not an absolute", "https://": "not an absolute",
		"http://api.x.com": "must use https", "https://me:pw@api.x.com": "https://me:xxxxx@api.x.com must not carry",
		"http://me:pw@[::1": "does not parse", "https://api.x.com/a b": "white space", "https://api.x.com/?q=1": "query",
		"https://api.x.com/#f": "fragment",
	} {
		_, err := CheckURL(bad)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "pw") {
			t.Errorf("%s: %v, want %q", bad, err, want)
		}
	}
}
