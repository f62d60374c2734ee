package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cq-source-x/cq-source-x/auth"
	"github.com/cq-source-x/cq-source-x/internal/secrets"
	"github.com/spf13/cobra"
)

// logoutOptions are the flags of `cq-source-x logout`.
type logoutOptions struct {
	tokenFile, clientID, clientSecret, revokeURL string
	noRevoke                                     bool
	out                                          io.Writer
}

const connectedApps = "https://x.com/settings/connected_apps"

// logout revokes the token file's refresh and access tokens at X and then
// removes the file, its refresh marker and its lock file, under the file's
// lock, so that no sync refreshes the pair meanwhile. When a revocation
// fails nothing is removed.
func logout(ctx context.Context, o logoutOptions) error {
	if o.tokenFile == "" {
		return usageError(errors.New("logout: --token-file is required"))
	}
	if _, err := os.Lstat(o.tokenFile); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("logout: there is no token file %s: nothing to log out of", o.tokenFile)
	}
	file := auth.TokenFile{Path: o.tokenFile}
	lctx, cancel := context.WithTimeout(ctx, auth.DefaultLockTimeout)
	unlock, err := file.Lock(lctx)
	cancel()
	if err != nil {
		return fmt.Errorf("logout: %w", err)
	}
	defer unlock() // a no-op once removeTokenFile unlocked it
	stored, err := file.Load()
	who := ""
	switch {
	case err == nil:
		who = " of " + describeUser(stored)
	case !o.noRevoke:
		return fmt.Errorf("logout: %w; nothing was revoked or removed (--no-revoke removes the file without revoking its tokens)", err)
	}
	if !o.noRevoke {
		if err := o.revoke(ctx, stored); err != nil {
			return err
		}
	}
	if err := removeTokenFile(o.tokenFile, unlock); err != nil {
		return fmt.Errorf("logout: %w", err)
	}
	if o.noRevoke {
		fmt.Fprintf(o.out, "Removed %s without revoking its tokens%s: its refresh token stays valid at X until you remove the app's access at %s.\n", o.tokenFile, who, connectedApps)
		return nil
	}
	fmt.Fprintf(o.out, "Revoked the tokens%s at X and removed %s. The apps you authorized are listed at %s.\n", who, o.tokenFile, connectedApps)
	return nil
}

// revoke revokes the stored refresh and access tokens (POST
// /2/oauth2/revoke) as the app that issued them.
func (o logoutOptions) revoke(ctx context.Context, stored *auth.StoredToken) error {
	cfg := auth.Config{ClientID: cmp.Or(o.clientID, stored.ClientID), ClientSecret: o.clientSecret}
	if cfg.ClientID == "" {
		return usageErrorf("logout: %s records no client id: give the app's --client-id", o.tokenFile)
	}
	// The endpoint may echo what it was sent (the Basic header of a
	// confidential app too): the error says none of it.
	credentials := secrets.New(stored.RefreshToken, stored.AccessToken)
	credentials.AddBasic(cfg.ClientID, cfg.ClientSecret)
	for _, t := range [][2]string{{stored.RefreshToken, auth.HintRefreshToken}, {stored.AccessToken, auth.HintAccessToken}} {
		if t[0] == "" {
			continue
		}
		if err := auth.Revoke(ctx, cfg, o.revokeURL, t[0], t[1], nil); err != nil {
			return fmt.Errorf("logout: revoking the %s: %w; %s was not removed: run the logout again (or remove the app's access at %s and use --no-revoke)",
				t[1], credentials.Error(err), o.tokenFile, connectedApps)
		}
	}
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
// variable name (a flag's default is shown in --help; a secret must not be).
func fromEnv(flag *string, name string) { *flag = cmp.Or(*flag, os.Getenv(name)) }

func (a *app) logoutCommand() *cobra.Command {
	o := logoutOptions{out: a.stderr}
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			fromEnv(&o.clientSecret, "X_CLIENT_SECRET")
			return logout(cmd.Context(), o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.tokenFile, "token-file", "x-token.json", "the token file to log out of")
	fs.StringVar(&o.clientID, "client-id", "", "OAuth 2.0 Client ID of the app (default: the one the token file records)")
	fs.StringVar(&o.clientSecret, "client-secret", "", "client secret, for confidential apps (Web App, bot) only (env X_CLIENT_SECRET)")
	fs.StringVar(&o.revokeURL, "revoke-url", auth.DefaultRevokeURL, "revocation endpoint")
	fs.BoolVar(&o.noRevoke, "no-revoke", false, "remove the file without revoking its tokens")
	_ = cmd.MarkFlagFilename("token-file", "json")
	return cmd
}
