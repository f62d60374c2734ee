package auth

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func (e *env) client(s *FileTokenSource) *http.Client {
	return &http.Client{Transport: NewTransport(s, e.fx.srv.Client().Transport)}
}

func TestTransportSetsBearer(t *testing.T) {
	e := newEnv(t, "")
	resp, err := e.client(e.source()).Get(e.fx.srv.URL + "/2/users/me")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || e.refreshes() != 0 {
		t.Fatalf("%s, refreshes %d", resp.Status, e.refreshes())
	}
}

func TestTransportRefreshesOnceOn401(t *testing.T) {
	e := newEnv(t, "")
	s := e.source()
	c := e.client(s)
	e.fx.revokeAccess(e.orig.AccessToken) // X rejects the token before its expiry

	resp, err := c.Get(e.fx.srv.URL + "/2/users/me")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %s", resp.Status)
	}
	if e.refreshes() != 1 || e.fx.apiCount("/2/users/me") != 2 {
		t.Errorf("refreshes %d, API requests %d; want 1 and 2", e.refreshes(), e.fx.apiCount("/2/users/me"))
	}
	if disk := e.load(); disk.AccessToken == e.orig.AccessToken {
		t.Error("refreshed token not saved")
	}

	// A body that can be replayed is sent again in full.
	e.fx.revokeAccess(e.load().AccessToken)
	resp, err = c.Post(e.fx.srv.URL+"/2/echo", "application/json", bytes.NewReader([]byte(`{"tweet_id":"1"}`)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `tweet_id`) || e.refreshes() != 2 {
		t.Errorf("POST retry: %s %s (refreshes %d)", resp.Status, body, e.refreshes())
	}
}

func TestTransportRetriesAtMostOnce(t *testing.T) {
	e := newEnv(t, "")
	e.fx.set(func(fx *fakeX) { fx.always401 = true })
	resp, err := e.client(e.source()).Get(e.fx.srv.URL + "/2/users/me")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("status %s, want the second 401", resp.Status)
	}
	if n := e.fx.apiCount("/2/users/me"); n != 2 || e.refreshes() != 1 {
		t.Errorf("API requests %d, refreshes %d; want 2 and 1", n, e.refreshes())
	}
}

type onceReader struct{ io.Reader }

func (onceReader) Close() error { return nil }

func TestTransportDoesNotRetryUnreplayableBody(t *testing.T) {
	e := newEnv(t, "")
	e.fx.revokeAccess(e.orig.AccessToken)
	req, _ := http.NewRequest(http.MethodPost, e.fx.srv.URL+"/2/echo", onceReader{strings.NewReader("x")})
	req.GetBody = nil
	resp, err := e.client(e.source()).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || e.fx.apiCount("/2/echo") != 1 || e.refreshes() != 0 {
		t.Errorf("status %s, requests %d, refreshes %d", resp.Status, e.fx.apiCount("/2/echo"), e.refreshes())
	}
}

func TestTransportRefreshesBeforeExpiry(t *testing.T) {
	e := newEnv(t, "")
	c := e.client(e.source())
	e.clk.Advance(2*time.Hour - time.Minute)
	resp, err := c.Get(e.fx.srv.URL + "/2/users/me")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || e.refreshes() != 1 || e.fx.apiCount("/2/users/me") != 1 {
		t.Errorf("status %s, refreshes %d, API requests %d", resp.Status, e.refreshes(), e.fx.apiCount("/2/users/me"))
	}
}

func TestTransportReturnsLoginRequired(t *testing.T) {
	e := newEnv(t, "")
	e.fx.set(func(fx *fakeX) { fx.strictSpent = false })
	e.fx.spend(e.orig.RefreshToken)
	e.fx.revokeAccess(e.orig.AccessToken)
	_, err := e.client(e.source()).Get(e.fx.srv.URL + "/2/users/me")
	if !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("err = %v", err)
	}
}
