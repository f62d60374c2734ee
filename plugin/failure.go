package plugin

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/billing"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/spec"
	"github.com/cq-source-x/cq-source-x/walk"
)

// AccountFailure tells what went wrong for one account in a sync, each
// distinct problem once (docs/design/plugin.md#account-failures), with no
// credential of the sync; nil for an account that synced.
func AccountFailure(s *spec.Spec, sess *account.Session) []string {
	failed := []account.WalkReport{{Err: sess.Err}}
	if sess.Err == nil {
		failed = sess.Report().Walks()
	}
	failed = slices.DeleteFunc(failed, func(w account.WalkReport) bool { return w.Err == nil || errors.Is(w.Err, walk.ErrInterrupted) })
	if len(failed) == 0 {
		return nil
	}
	if line, ok := unreachable(s, sess, failed); ok {
		return sess.Secrets.Strings([]string{line})
	}
	var lines []string
	for _, w := range failed {
		line, ofAccount := describe(s, sess.Index, w.Err)
		line = strings.TrimPrefix(line, sess.ID()+": ")
		if !ofAccount && w.Table != "" {
			line = w.Table + ": " + line
		}
		if !slices.Contains(lines, line) {
			lines = append(lines, line)
		}
	}
	return sess.Secrets.Strings(lines)
}

// describe is err as a person should read it: without a URL's query string
// (the spec's fields), a refused token told the same way for every request.
// ofAccount reports that it is the account's problem, not the list's.
func describe(s *spec.Spec, index int, err error) (text string, ofAccount bool) {
	if apiErr, ok := errors.AsType[*client.APIError](err); ok && (errors.Is(apiErr, client.ErrUnauthorized) || errors.Is(apiErr, client.ErrForbidden)) {
		status := strings.TrimPrefix(apiErr.Error(), "x api: "+string(apiErr.Operation)+": ")
		if index < len(s.Accounts) && s.Accounts[index].AccessToken != "" && errors.Is(apiErr, client.ErrUnauthorized) {
			return fmt.Sprintf("the API refused accounts[%d].access_token (%d %s). "+
				"It has expired (X access tokens live two hours) or was revoked, and a raw access_token cannot be refreshed: "+
				"run `cq-source-x login` and set accounts[%d].token_file instead of access_token (a token file is refreshed automatically)",
				index, apiErr.Status, http.StatusText(apiErr.Status), index), true
		}
		if errors.Is(apiErr, client.ErrUnauthorized) {
			return "the API refused the account's token: " + status, true
		}
		return "the API refused the account's requests: " + status, true
	}
	return urlQuery.ReplaceAllString(err.Error(), `$1"`), false
}

// urlQuery matches the query string of a quoted URL (net/http quotes a failed request's).
var urlQuery = regexp.MustCompile(`("https?://[^"?\s]*)\?[^"\s]*"`)

// unreachable reports, and says, that no request of the account got an
// answer from base_url (noAnswer).
func unreachable(s *spec.Spec, sess *account.Session, failed []account.WalkReport) (string, bool) {
	var total billing.Usage
	if sess.Meter != nil {
		total = sess.Meter.Total()
	}
	if total.Requests == 0 || total.OK > 0 {
		return "", false
	}
	cause := ""
	for _, w := range failed {
		c, isNet := noAnswer(w.Err)
		if !isNet {
			return "", false
		}
		cause = c
	}
	return fmt.Sprintf("none of %d requests to %s got an answer from the X API (%s): check base_url", total.Requests, s.BaseURL, cause), true
}

// noAnswer returns the cause of a request that got no answer from the API
// server, a 404 (a base_url with a wrong path) included.
func noAnswer(err error) (string, bool) {
	if t, ok := errors.AsType[*client.TimeoutError](err); ok && t.Phase == client.PhaseConnect {
		return t.Error(), true
	}
	if cause := cmp.Or(
		causeOf[*net.DNSError](err, ""),
		causeOf[*tls.CertificateVerificationError](err, ""),
		causeOf[x509.HostnameError](err, ""),
		causeOf[x509.UnknownAuthorityError](err, ""),
		causeOf[tls.RecordHeaderError](err, "the server does not speak TLS: "),
		causeOf[*net.OpError](err, ""),
	); cause != "" {
		return cause, true
	}
	if apiErr, ok := errors.AsType[*client.APIError](err); ok && errors.Is(apiErr, client.ErrNotFound) {
		return "404 Not Found", true
	}
	return "", false
}

// causeOf is prefix and the first E of err's tree, or "" when there is none.
func causeOf[E error](err error, prefix string) string {
	if e, ok := errors.AsType[E](err); ok {
		return prefix + e.Error()
	}
	return ""
}

// relativeTokenFileError says where the plugin looked for a token file that
// is not there, given as a relative path: in its working directory
// (docs/design/plugin.md#account-failures).
func relativeTokenFileError(path string, err error) error {
	if filepath.IsAbs(path) {
		return err
	}
	if _, serr := os.Stat(path); !errors.Is(serr, fs.ErrNotExist) {
		return err
	}
	wd, werr := os.Getwd()
	if werr != nil {
		return err
	}
	return fmt.Errorf("no token file at %s: token_file %q is relative, so it is looked for in the working directory (%s), "+
		"where `cloudquery sync` runs; the plugin is not told where the spec file is. Write the absolute path, "+
		"or run cloudquery from the directory that holds the file (%w)", filepath.Join(wd, path), path, wd, err)
}
