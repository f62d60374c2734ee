package auth

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/oauth2"
)

// DefaultRevokeURL is X's token revocation endpoint (RFC 7009).
const DefaultRevokeURL = "https://api.x.com/2/oauth2/revoke"

// Token type hints for Revoke.
const (
	HintAccessToken  = "access_token"
	HintRefreshToken = "refresh_token"
)

// Revoke asks X to revoke token at endpoint ("" means DefaultRevokeURL). X answers 200 for a
// token it does not know (RFC 7009): revoking twice is no error. Failures are
// *TokenEndpointError with Op "revoke".
func Revoke(ctx context.Context, cfg Config, endpoint, token, hint string, hc *http.Client) error {
	endpoint, hc = cmp.Or(endpoint, DefaultRevokeURL), cmp.Or(hc, defaultHTTPClient())
	if err := cmp.Or(cfg.Validate(), checkEndpoint("RevokeURL", endpoint)); err != nil {
		return err
	}
	secrets := []string{token, cfg.ClientSecret}
	form := url.Values{"token": {token}, "token_type_hint": {hint}}
	if !cfg.Confidential() {
		form.Set("client_id", cfg.ClientID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("auth: revoke: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if cfg.Confidential() {
		req.SetBasicAuth(url.QueryEscape(cfg.ClientID), url.QueryEscape(cfg.ClientSecret))
	}
	resp, err := hc.Do(req)
	if err != nil {
		return tokenEndpointError("revoke", err, secrets...)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	var oe struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	_ = json.Unmarshal(body, &oe)
	return tokenEndpointError("revoke", &oauth2.RetrieveError{Response: resp, ErrorCode: oe.Error, ErrorDescription: oe.Description}, secrets...)
}
