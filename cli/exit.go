package cli

import (
	"context"
	"errors"
	"fmt"
)

// Exit codes, documented in exitCodesHelp and docs/cli.md: scripts and
// cron jobs branch on them.
const (
	ExitOK    = 0
	ExitError = 1
	// ExitUsage: the command line or the configuration is wrong; nothing
	// was done.
	ExitUsage = 2
	// ExitSomeAccountsFailed: some part failed (accounts, a table of an
	// account, export's compliance check), the rest was done.
	ExitSomeAccountsFailed = 3
	ExitAllAccountsFailed  = 4
	// ExitInterrupted is 128 + SIGINT, as a shell reports it.
	ExitInterrupted = 130
)

const exitCodesHelp = `Exit codes:
    0  done
    1  failed (network, disk, output directory, login refused)
    2  usage or configuration error (command line, spec file): nothing was done
    3  some part failed (accounts, a table of an account, export's compliance
       check, a damaged file of the archive); the rest was done
    4  nothing was done: every account failed
  130  interrupted (Ctrl-C, SIGTERM); export kept what it had read: run it again`

// exitError is an error with the exit code it ends the process with.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError marks err as a mistake in the command line or configuration.
func usageError(err error) error { return &exitError{code: ExitUsage, err: err} }

func usageErrorf(format string, a ...any) error { return usageError(fmt.Errorf(format, a...)) }

// accountsError is err (which says which accounts failed) with the exit
// code for failed of total accounts.
func accountsError(failed, total int, err error) error {
	code := ExitSomeAccountsFailed
	if failed >= total {
		code = ExitAllAccountsFailed
	}
	return &exitError{code: code, err: err}
}

// interrupted is err with ExitInterrupted when ctx ended (Ctrl-C,
// SIGTERM), whatever else err says.
func interrupted(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	return &exitError{code: ExitInterrupted, err: err}
}

// exitCode is the code err ends the process with; started tells whether
// the command's own code ran (errors before it are the command line's).
func exitCode(err error, started bool) int {
	var ee *exitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	case !started:
		return ExitUsage
	default:
		return ExitError
	}
}
