package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"

	"github.com/cq-source-x/cq-source-x/auth"
	"github.com/cq-source-x/cq-source-x/internal/secrets"
	"github.com/spf13/cobra"
)

// LogoutOptions are the settings of `cq-source-x logout`.
type LogoutOptions struct {
	TokenFile string
	// ClientID defaults to the one the token file records; ClientSecret is
	// needed for a confidential app, as for refreshing.
	ClientID, ClientSecret string
	RevokeURL              string
	// NoRevoke removes the file without revoking its tokens.
	NoRevoke   bool
	Out        io.Writer
	HTTPClient *http.Client
}

const connectedApps = "https://x.com/settings/connected_apps"

// Logout revokes the token file's refresh and access tokens at X
// (POST /2/oauth2/revoke) and then removes the file, its refresh marker and
// its lock file. Under the file's lock, so that no sync refreshes the pair
// meanwhile. When a revocation fails nothing is removed.
func Logout(ctx context.Context, o LogoutOptions) error {
	if o.TokenFile == "" {
		return usageError(errors.New("logout: --token-file is required"))
	}
	if _, err := os.Lstat(o.TokenFile); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("logout: there is no token file %s: nothing to log out of", o.TokenFile)
	}
	file := auth.TokenFile{Path: o.TokenFile}
	lctx, cancel := context.WithTimeout(ctx, auth.DefaultLockTimeout)
	unlock, err := file.Lock(lctx)
	cancel()
	if err != nil {
		return fmt.Errorf("logout: %w", err)
	}
	locked := true
	defer func() {
		if locked {
			_ = unlock()
		}
	}()
	stored, err := file.Load()
	who := ""
	switch {
	case err == nil:
		who = " of " + describeUser(stored)
	case !o.NoRevoke:
		return fmt.Errorf("logout: %w; nothing was revoked or removed (--no-revoke removes the file without revoking its tokens)", err)
	}
	if !o.NoRevoke {
		cfg := auth.Config{ClientID: firstNonEmpty(o.ClientID, stored.ClientID), ClientSecret: o.ClientSecret}
		if cfg.ClientID == "" {
			return usageErrorf("logout: %s records no client id: give the app's --client-id", o.TokenFile)
		}
		// The endpoint may echo what it was sent (the Basic header of a
		// confidential app too): the error says none of it.
		credentials := secrets.New(stored.RefreshToken, stored.AccessToken)
		credentials.AddBasic(cfg.ClientID, cfg.ClientSecret)
		for _, t := range []struct{ token, hint string }{
			{stored.RefreshToken, auth.HintRefreshToken},
			{stored.AccessToken, auth.HintAccessToken},
		} {
			if t.token == "" {
				continue
			}
			if err := auth.Revoke(ctx, cfg, o.RevokeURL, t.token, t.hint, o.HTTPClient); err != nil {
				return fmt.Errorf("logout: revoking the %s: %w; %s was not removed: run the logout again (or remove the app's access at %s and use --no-revoke)",
					t.hint, credentials.Error(err), o.TokenFile, connectedApps)
			}
		}
	}
	if err := removeTokenFile(o.TokenFile, func() error { locked = false; return unlock() }); err != nil {
		return fmt.Errorf("logout: %w", err)
	}
	if o.NoRevoke {
		fmt.Fprintf(o.Out, "Removed %s without revoking its tokens%s: its refresh token stays valid at X until you remove the app's access at %s.\n", o.TokenFile, who, connectedApps)
		return nil
	}
	fmt.Fprintf(o.Out, "Revoked the tokens%s at X and removed %s. The apps you authorized are listed at %s.\n", who, o.TokenFile, connectedApps)
	return nil
}

// removeTokenFile removes path (and, when it is a symlink, the file it
// points to), the refresh marker and, after unlock, the lock file, which
// sit beside the real file.
func removeTokenFile(path string, unlock func() error) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	for _, p := range []string{real, path, real + ".refreshing"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := unlock(); err != nil {
		return err
	}
	// A process that waited for the lock finds no token file, and says to log in.
	if err := os.Remove(real + ".lock"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func describeUser(t *auth.StoredToken) string {
	switch {
	case t.Username != "" && t.UserID != "":
		return fmt.Sprintf("@%s (user id %s)", t.Username, t.UserID)
	case t.UserID != "":
		return "user id " + t.UserID
	default:
		return "an unknown user"
	}
}

// fromEnv sets *flag, when the flag was not given, from the environment
// variable name. (A flag's default is shown in --help, and a secret must
// not be.)
func fromEnv(flag *string, name string) {
	if *flag == "" {
		*flag = os.Getenv(name)
	}
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

func (a *app) logoutCommand() *cobra.Command {
	o := LogoutOptions{Out: a.stderr}
	cmd := &cobra.Command{
		Use:   "logout [--token-file FILE]",
		Short: "Revoke a token file's tokens at X and remove the file",
		Long: `Revoke the refresh and access tokens of a token file at X (POST
/2/oauth2/revoke, as the app that issued them: the client id the file records,
and --client-secret for a confidential app) and remove the file, with its lock
and refresh marker. If X cannot be reached or refuses, nothing is removed.
--no-revoke only removes the file (the refresh token then stays valid at X
until you remove the app's access in X's settings).`,
		Example: "  " + Name + " logout --token-file alice.json",
		GroupID: groupAccounts,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fromEnv(&o.ClientSecret, "X_CLIENT_SECRET")
			return Logout(cmd.Context(), o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.TokenFile, "token-file", "x-token.json", "the token file to log out of")
	fs.StringVar(&o.ClientID, "client-id", "", "OAuth 2.0 Client ID of the app (default: the one the token file records)")
	fs.StringVar(&o.ClientSecret, "client-secret", "", "client secret, for confidential apps (Web App, bot) only (env X_CLIENT_SECRET)")
	fs.StringVar(&o.RevokeURL, "revoke-url", auth.DefaultRevokeURL, "revocation endpoint")
	fs.BoolVar(&o.NoRevoke, "no-revoke", false, "remove the file without revoking its tokens")
	_ = cmd.MarkFlagFilename("token-file", "json")
	return cmd
}
