// Package xsim is an in-process simulator of the X (Twitter) API v2 bookmark
// endpoints and OAuth 2.0, built from the interface document
// (docs/design/interface.md) and the X API facts notes. Other
// packages test against it over real HTTP on 127.0.0.1.
//
// What it models:
//
//   - The bookmark list of each user, newest-bookmarked first. Bookmarking
//     puts a post at the top (moving it there if already present); removing
//     shifts the rest up; order is by bookmark time, never by post id (ids are
//     random-looking snowflakes). The list is a slice stored oldest-first, so
//     a million bookmarks cost one append each and no per-post structs.
//   - Pagination: max_results 1..100 (default 10), opaque base32hex
//     pagination tokens that encode a position (offset from the top) plus a
//     check value. A token reused after the list changed is not an error: it
//     returns shifted, skipped or duplicated posts, all billed. next_token is
//     absent on the last page; previous_token is present when a page does not
//     start at the top. A token is only valid for the list it came from
//     (operation, user, folder); a garbage or foreign token is a 400.
//   - Post content, generated deterministically and lazily from the post id
//     (text, created_at from the snowflake, author with a profile, lang,
//     metrics, entities, replies, quotes, photos, videos and GIFs with
//     variants, long-post note_tweet, X Articles with a title, a long body
//     and photos), unless registered with PutPost. Field selection
//     (tweet.fields, user.fields, media.fields, expansions author_id,
//     attachments.media_keys, in_reply_to_user_id,
//     referenced_tweets.id[.author_id|.attachments.media_keys],
//     article.cover_media, article.media_entities) is honoured;
//     unknown field names, unknown query parameters and out-of-range values
//     are 400 problem details. Requesting non_public_metrics, organic_metrics
//     or promoted_metrics gives a 200 with the data and one "Field
//     Authorization Error" per post and field in "errors" (the posts are
//     never the requesting user's own). A referenced post that was deleted
//     or whose author is protected or suspended (SetPostCompliance,
//     DeletePost; and one generated reference in 20) is a partial error in
//     "errors" ("Not Found Error" or "Authorization Error", parameter
//     referenced_tweets.id), not in includes.
//   - Folders: list (id, name; creation order) and read (post ids only,
//     newest-added first, paginated like the list, each id billed).
//     Folders are independent of the main list.
//   - Authentication: user-context bearer tokens bound to one user and a set
//     of scopes; app-only tokens are refused with the real 403 body; tokens
//     expire, rotate and can be revoked. OAuth 2.0 authorization code with
//     PKCE (S256 only), public and confidential clients, 30-second single-use
//     codes, 2-hour access tokens, rotating refresh tokens (offline.access).
//   - Rate limits per user and operation (and per app for the folder
//     operations) in fixed windows, with x-rate-limit-* headers on every
//     response of the API operations, and 429 bodies in the current or the
//     legacy shape.
//   - Billing (billing.go): every resource a 200 returns is billed at its
//     type's rate (truncated responses too; failed requests are not): the
//     posts of data and includes.tweets, the users of includes.users and
//     users/me; media are not billed. Each resource once per UTC day of the
//     server's clock per app (the token's client; X de-duplicates per
//     developer account). The bookmarks of an app's owner (SetAppOwner),
//     read with the app, are owned reads. A credit balance in posts (of
//     data) gives 402 CreditsDepleted when a post-reading request would
//     exceed it.
//   - Deterministic fault injection (5xx, injected 429, connection reset,
//     truncated body, latency), a pure function of (seed, request number).
//   - A hook called before each request, which may change the list while a
//     client walks it.
//   - A media host (media.go) on a loopback port of its own, as X's CDN:
//     the photos (JPEG, PNG), videos and GIFs (MP4 variants) and stills
//     the media objects name, real files made from their path at any size
//     without holding them in memory, with faults per file (a status such
//     as 404, 410 or 403, slow and cut bodies, a wrong Content-Length, a
//     redirect, a huge file); a deleted post's media answer 404 and 410.
//     It records the Authorization header of every request.
//   - Batch compliance jobs (compliance.go): create, upload to a signed URL
//     on a storage host of its own (15 minutes), completion after a delay on
//     the server's clock, failed and expired jobs, results with every reason
//     for posts marked deleted, suspended, protected, bounced or
//     geo-scrubbed, app-only tokens only, one job per type and app.
//
// What it deliberately does not model: posts being withheld in some
// countries, any cap on
// how deep a walk can go (the old 800-bookmark cap) or the reported early end
// of walks at max_results=100, since_id (there is none), other endpoints
// (GET /2/tweets, timelines, ...), and HTTP/2. The authorize endpoint
// approves (or denies) at once as the user set with SetAuthorizingUser, or,
// for a client given ShowConsentPage, shows a page on which a person picks
// the demo account that approves (the sandbox's rehearsal of a login).
//
// Conventions worth knowing:
//
//   - Users are created on first mention by any Go method (AddUser, IssueToken,
//     Bookmark, SeedBookmarks, ...) with username "user_<id>"; a user id that
//     was never mentioned is a 404 on the API.
//   - IssueToken tokens never expire (long virtual-time runs keep working);
//     IssueTokenWithExpiry, IssueTokenPair and the token endpoint issue
//     expiring ones.
//   - Check order on the API: injected fault, token (401, app-only 403),
//     rate limit (429), unknown user (404), token for another user (403),
//     scopes (403), parameters (400), folder (404), credits (402).
//   - A request counts against the rate limit once its token is valid, even
//     if it then fails with 400/403/404/402. Injected 5xx, 429 and resets do
//     not count against it. With DisableRateLimits the headers are still
//     sent, advertising a limit (and remaining) of one billion, so that a
//     client budgeting from the headers never waits.
//   - max_results defaults to 10 on all three paginated operations.
//   - The meter (Usage) is keyed by the token's user (the path user when the
//     token is not valid); ByStatus counts every response, 200s included, and
//     0 for connection resets. OAuth token/revoke requests are metered under
//     the user the token belongs to, or "" when unknown.
//   - Bookmark times are the clock's now, made strictly increasing by adding
//     nanoseconds when the clock has not moved (SeedBookmarks uses
//     consecutive nanoseconds).
//   - Go's http.Transport silently retries an idempotent request whose reused
//     connection is reset; disable keep-alives to observe injected resets.
package xsim
