package resources

import (
	"errors"
	"slices"

	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/client"
)

// UsageClients is the top-level client of the x_api_usage pass: every
// account, and the app's compliance requests when the spec checks them.
type UsageClients struct {
	*account.Set
	Compliance *Compliance
}

// usageMultiplex gives each account, and the compliance checks, a run of
// the usage resolver.
func usageMultiplex(meta schema.ClientMeta) []schema.ClientMeta {
	u, ok := meta.(*UsageClients)
	if !ok {
		return account.Multiplex(meta)
	}
	out := account.Multiplex(u.Set)
	if u.Compliance != nil && u.Compliance.Meter != nil {
		out = append(out, u.Compliance)
	}
	return out
}

// ComplianceUsageUser and ComplianceUsageAccount are the user_id and the
// account of the compliance requests' usage rows: they are the app's, not
// an account's.
const (
	ComplianceUsageUser    = "app"
	ComplianceUsageAccount = "compliance"
)

// UsageRows are the compliance requests of the sync, one row per operation
// (nothing is billed), with the check's failure on the row of the
// operation that failed.
func (c *Compliance) UsageRows() []*Usage {
	user := ComplianceUsageUser
	if c.Scope != "" {
		user += "/" + c.Scope
	}
	base := Usage{SyncID: c.Sync.ID, SyncStartedAt: c.Sync.StartedAt, UserID: user, Account: ComplianceUsageAccount}
	failure := c.Failure()
	failedOp := client.OpCreateComplianceJob
	var je *jobError
	var ae *client.APIError
	var re *client.RateLimitError
	var me *client.MalformedResponseError
	switch {
	case errors.As(failure, &je):
		failedOp = je.op
	case errors.As(failure, &ae):
		failedOp = ae.Operation
	case errors.As(failure, &re):
		failedOp = re.Operation
	case errors.As(failure, &me):
		failedOp = me.Operation
	}
	var rows []*Usage
	for _, m := range c.Meter.Snapshot() {
		u := base
		u.Operation = string(m.Operation)
		u.Requests, u.OKResponses, u.Errors = m.Requests, m.OK, m.Errors
		u.RateLimited, u.RateLimitWaits, u.WaitedSeconds = m.RateLimited, m.RateLimitWaits, m.Waited.Seconds()
		rows = append(rows, &u)
	}
	if failure != nil {
		i := slices.IndexFunc(rows, func(u *Usage) bool { return u.Operation == string(failedOp) })
		if i < 0 {
			u := base
			u.Operation = string(failedOp)
			rows = append(rows, &u)
			i = len(rows) - 1
		}
		rows[i].Failure = c.Redact.String(failure.Error())
	}
	slices.SortFunc(rows, func(a, b *Usage) int { return opOrder(a.Operation) - opOrder(b.Operation) })
	return rows
}
