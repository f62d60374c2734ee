package e2e

import (
	"math"
	"strconv"
	"testing"

	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// otherUser is a second account of the same app, which it does not own.
const otherUser = "1002"

// ownedReadsHarness has two accounts of one app, user (who owns it, as the
// simulator bills) and otherUser, each with bookmarks of its own; extra is
// added to user's account. With resolved, the spec gives no user ids: the
// plugin learns them with GET /2/users/me.
func ownedReadsHarness(t *testing.T, resolved bool, extra map[string]any) *harness {
	t.Helper()
	h := newHarness(t, 30)
	h.sim.SeedBookmarks(otherUser, 20)
	h.sim.SetAppOwner("", user)
	var accounts []map[string]any
	for _, id := range []string{user, otherUser} {
		a := map[string]any{"access_token": h.sim.IssueToken(id)}
		if !resolved {
			a["user_id"] = id
		}
		accounts = append(accounts, a)
	}
	for k, v := range extra {
		accounts[0][k] = v
	}
	h.spec["accounts"] = accounts
	return h
}

func userIDsFrom(resolved bool) string {
	if resolved {
		return "user ids from users/me"
	}
	return "user ids in the spec"
}

// mustPriceBookmarks checks the list_bookmarks row of x_api_usage of one
// account: its owned_reads, posts_usd at the owned or the post rate, and an
// estimate equal to the simulator's bill.
func mustPriceBookmarks(t *testing.T, r syncResult, sim *xsim.Server, userID string, owned bool) {
	t.Helper()
	row := r.usageOf[userID]["list_bookmarks"]
	rate := 0.005
	if owned {
		rate = 0.001
	}
	billed, _ := strconv.Atoi(row["posts_billed"])
	postsUSD, _ := strconv.ParseFloat(row["posts_usd"], 64)
	estimated, _ := strconv.ParseFloat(row["estimated_usd"], 64)
	bill := sim.Usage(userID)[xsim.OpListBookmarks]
	if row["owned_reads"] != strconv.FormatBool(owned) || billed == 0 || math.Abs(postsUSD-float64(billed)*rate) > 1e-9 {
		t.Errorf("user %s: owned_reads %s, posts_billed %d, posts_usd %s; want owned_reads %v and posts_usd = posts_billed × %g",
			userID, row["owned_reads"], billed, row["posts_usd"], owned, rate)
	}
	if bill.OwnedReads != owned || math.Abs(estimated-bill.USD) > 1e-9 {
		t.Errorf("user %s: estimated_usd %s; the simulator billed %.6f (owned reads %v)", userID, row["estimated_usd"], bill.USD, bill.OwnedReads)
	}
}

// The account whose user is app_owner_user_id reads its bookmarks at the
// owned-read rate, whether its user id is in the spec or resolved with
// GET /2/users/me; another account of the same app pays the post rate.
func TestAppOwnerUserIDMakesThatAccountsReadsOwned(t *testing.T) {
	for _, resolved := range []bool{false, true} {
		t.Run(userIDsFrom(resolved), func(t *testing.T) {
			h := ownedReadsHarness(t, resolved, nil)
			h.spec["app_owner_user_id"] = user
			r := h.sync()
			if len(r.errors) != 0 {
				t.Fatalf("sync errors %v", r.errors)
			}
			mustPriceBookmarks(t, r, h.sim, user, true)
			mustPriceBookmarks(t, r, h.sim, otherUser, false)
		})
	}
}

// accounts[].owned_reads: true prices that account's bookmark reads as
// owned reads, without app_owner_user_id; the other account's are not.
func TestAccountOwnedReadsMakesItsReadsOwned(t *testing.T) {
	for _, resolved := range []bool{false, true} {
		t.Run(userIDsFrom(resolved), func(t *testing.T) {
			h := ownedReadsHarness(t, resolved, map[string]any{"owned_reads": true})
			r := h.sync()
			if len(r.errors) != 0 {
				t.Fatalf("sync errors %v", r.errors)
			}
			mustPriceBookmarks(t, r, h.sim, user, true)
			mustPriceBookmarks(t, r, h.sim, otherUser, false)
		})
	}
}
