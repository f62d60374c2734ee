package export_test

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/export"
)

// estimate is the dry run's estimate of a spec whose plugin spec is
// plugin, into an empty archive, for accounts of userIDs.
func estimate(t *testing.T, plugin string, userIDs ...string) *export.Estimate {
	t.Helper()
	text := "kind: source\nspec:\n  name: x\n  path: ./cq-source-x\n  registry: local\n  tables: [\"*\"]\n  destinations: [\"file\"]\n  spec:\n" + plugin
	src, err := cqspec.Parse([]byte(text), "x.yml", os.LookupEnv, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	est, err := export.EstimateRun(src, t.TempDir(), userIDs)
	if err != nil {
		t.Fatal(err)
	}
	return est
}

// A first sync's bound: X does not say how long a list is, so a walk of
// the bookmarks list bills at most planner.max_billed_posts posts, the
// posts they reference (two at most: a quote and a reply) and the users
// expanded with them (their authors and the referenced posts'), priced at
// the account's rates: owned reads for the app's owner. An account whose
// user id is not known without a request is bounded as a first sync, and
// adds the user read of GET /2/users/me. Each folder adds at most the cap
// at the post rate; a first sync does not know how many there are.
func TestAFirstSyncIsBoundedByTheCapOfAWalkAndWhatTheContentKindsExpand(t *testing.T) {
	est := estimate(t, `    planner: {max_billed_posts: 1000}
    app_owner_user_id: "1001"
    content: {authors: true, referenced_posts: true}
    fields: {expansions: [entities.mentions.username]}
    accounts:
      - {user_id: "1001", access_token: a}
      - {access_token: b}
`, "1001", "")
	owner, other := est.Accounts[0], est.Accounts[1]
	if !owner.First || !owner.Owned || owner.Posts != 3000 || owner.Users != 3000 || !near(owner.USD, 3000*0.001+3000*0.010) || owner.Folders != -1 {
		t.Errorf("the app's owner: %+v", owner)
	}
	if !other.First || other.Owned || other.Posts != 3000 || other.Users != 3001 || !near(other.USD, 3000*0.005+3001*0.010) {
		t.Errorf("an account of unknown user: %+v", other)
	}
	if !est.Bounded || est.Folder.Posts != 1000 || !near(est.Folder.USD, 5) || len(est.Unbounded) != 1 || est.Unbounded[0] != "entities.mentions.username" || !near(est.USD, owner.USD+other.USD) {
		t.Errorf("estimate %+v", est)
	}
}

// With planner.max_billed_posts 0 nothing bounds a walk: the estimate says
// it is not bounded.
func TestNoCapNoBound(t *testing.T) {
	if est := estimate(t, "    planner: {max_billed_posts: 0}\n    accounts: [{user_id: \"1001\", access_token: a}]\n", "1001"); est.Bounded {
		t.Errorf("estimate %+v", est)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
