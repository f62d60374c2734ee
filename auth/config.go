package auth

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/cq-source-x/cq-source-x/internal/bearer"
	"golang.org/x/oauth2"
)

// X's OAuth 2.0 endpoints and the default loopback redirect.
const (
	DefaultAuthURL     = "https://x.com/i/oauth2/authorize"
	DefaultTokenURL    = "https://api.x.com/2/oauth2/token"
	DefaultRedirectURL = "http://127.0.0.1:8085/callback"
)

const (
	ScopeOfflineAccess = "offline.access" // makes X issue a refresh token: unattended runs need it
	ScopeBookmarkWrite = "bookmark.write" // adds and removes bookmarks
)

// ReadScopes are the scopes for reading bookmarks unattended; treat as read-only.
var ReadScopes = []string{"tweet.read", "users.read", "bookmark.read", ScopeOfflineAccess}

// Scopes returns a fresh copy of ReadScopes, plus bookmark.write when write is true.
func Scopes(write bool) []string {
	s := slices.Clone(ReadScopes)
	if write {
		s = append(s, ScopeBookmarkWrite)
	}
	return s
}

// Config identifies the X developer app and its endpoints; empty fields take the defaults.
// ClientSecret is set only for confidential clients; fmt and slog never show it.
type Config struct {
	ClientID     string
	ClientSecret string
	AuthURL      string
	TokenURL     string
	RedirectURL  string
	Scopes       []string
}

func (c Config) WithDefaults() Config {
	c.AuthURL = cmp.Or(c.AuthURL, DefaultAuthURL)
	c.TokenURL = cmp.Or(c.TokenURL, DefaultTokenURL)
	c.RedirectURL = cmp.Or(c.RedirectURL, DefaultRedirectURL)
	if len(c.Scopes) == 0 {
		c.Scopes = slices.Clone(ReadScopes)
	}
	return c
}

func (c Config) Confidential() bool { return c.ClientSecret != "" }

// Validate checks c (after defaults); errors name the field, never the client secret.
func (c Config) Validate() error {
	c = c.WithDefaults()
	var errs []error
	if strings.TrimSpace(c.ClientID) == "" {
		errs = append(errs, errors.New("auth: ClientID is empty: set the OAuth 2.0 Client ID of your X app (developer portal → your app → Keys and tokens)"))
	} else if c.ClientID != strings.TrimSpace(c.ClientID) {
		errs = append(errs, errors.New("auth: ClientID has leading or trailing white space"))
	}
	if c.ClientSecret != "" && c.ClientSecret != strings.TrimSpace(c.ClientSecret) {
		errs = append(errs, errors.New("auth: ClientSecret has leading or trailing white space"))
	}
	errs = append(errs, checkEndpoint("AuthURL", c.AuthURL), checkEndpoint("TokenURL", c.TokenURL)) // Join drops nils
	if u, err := url.Parse(c.RedirectURL); err != nil || !u.IsAbs() || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		errs = append(errs, fmt.Errorf("auth: RedirectURL %q is not an absolute http(s) URL; use the callback URL registered for your app, e.g. %s", c.RedirectURL, DefaultRedirectURL))
	}
	for _, s := range c.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\r\n") {
			errs = append(errs, fmt.Errorf("auth: Scopes: %q is not a scope name (give one scope per element)", s))
		}
	}
	if !slices.Contains(c.Scopes, ScopeOfflineAccess) {
		errs = append(errs, fmt.Errorf("auth: Scopes must include %q: without it X issues no refresh token and unattended runs stop when the access token expires after 2 hours", ScopeOfflineAccess))
	}
	return errors.Join(errs...)
}

// checkEndpoint checks the URL of the endpoint field with bearer.CheckURL.
func checkEndpoint(field, raw string) error {
	if _, err := bearer.CheckURL(raw); err != nil {
		return fmt.Errorf("auth: %s %w", field, err)
	}
	return nil
}

// OAuth2 returns the golang.org/x/oauth2 configuration for c. The authentication style is
// explicit (auto-detection is reported to fail against X): HTTP Basic with a secret only.
func (c Config) OAuth2() *oauth2.Config {
	c = c.WithDefaults()
	style := oauth2.AuthStyleInParams
	if c.Confidential() {
		style = oauth2.AuthStyleInHeader
	}
	return &oauth2.Config{ClientID: c.ClientID, ClientSecret: c.ClientSecret, RedirectURL: c.RedirectURL, Scopes: slices.Clone(c.Scopes),
		Endpoint: oauth2.Endpoint{AuthURL: c.AuthURL, TokenURL: c.TokenURL, AuthStyle: style}}
}

// String describes c without the client secret.
func (c Config) String() string {
	return fmt.Sprintf("{ClientID:%s ClientSecret:%s AuthURL:%s TokenURL:%s RedirectURL:%s Scopes:%v}",
		c.ClientID, redactString(c.ClientSecret), c.AuthURL, c.TokenURL, c.RedirectURL, c.Scopes)
}

func (c Config) Format(f fmt.State, verb rune) { formatRedacted(f, verb, "auth.Config", c.String()) }

// LogValue makes slog show c without the client secret.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// formatRedacted writes s, what String says, for every verb.
func formatRedacted(f fmt.State, verb rune, typeName, s string) {
	switch {
	case verb == 'v' && f.Flag('#'):
		s = typeName + s
	case verb == 'q':
		s = strconv.Quote(s)
	}
	_, _ = io.WriteString(f, s)
}
