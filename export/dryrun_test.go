package export_test

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/export"
)

// A first sync's bound: the newest 800 posts of the list, the posts they
// reference (two at most: a quote and a reply) and the users expanded with
// them (their authors and the referenced posts'), priced at the account's
// rates: owned reads for the app's owner. An account whose user id is not
// known without a request is bounded as a first sync, and adds the user
// read of GET /2/users/me.
func TestAFirstSyncIsBoundedByWhatXServesAndWhatTheContentKindsExpand(t *testing.T) {
	text := `kind: source
spec:
  name: x
  path: ./cq-source-x
  registry: local
  tables: ["*"]
  destinations: ["file"]
  spec:
    app_owner_user_id: "1001"
    content: {authors: true, referenced_posts: true}
    fields: {expansions: [entities.mentions.username]}
    accounts:
      - {user_id: "1001", access_token: a}
      - {access_token: b}
`
	src, err := cqspec.Parse([]byte(text), "x.yml", os.LookupEnv, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	est, err := export.EstimateRun(src, t.TempDir(), []string{"1001", ""})
	if err != nil {
		t.Fatal(err)
	}
	owner, other := est.Accounts[0], est.Accounts[1]
	if !owner.First || !owner.Owned || owner.MaxPosts != 2400 || owner.MaxUsers != 2400 || !near(owner.MaxUSD, 2400*0.001+2400*0.010) {
		t.Errorf("the app's owner: %+v", owner)
	}
	if !other.First || other.Owned || other.MaxPosts != 2400 || other.MaxUsers != 2401 || !near(other.MaxUSD, 2400*0.005+2401*0.010) {
		t.Errorf("an account of unknown user: %+v", other)
	}
	if len(est.Unbounded) != 1 || est.Unbounded[0] != "entities.mentions.username" || !near(est.MaxUSD, owner.MaxUSD+other.MaxUSD) {
		t.Errorf("estimate %+v", est)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
