package xsim

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Field selection (tweet.fields, user.fields, media.fields, poll.fields,
// place.fields) and expansions, in either naming (Options.Naming): the names
// of X's OpenAPI description 2.166 (tweet.fields, referenced_tweets.id, ...)
// or 2.167 (post.fields, referenced_posts, ...). Every name the description
// lists is accepted; the ones the simulator has data for are emitted, the
// rest are silently empty, and unknown names are a 400.

const (
	tfAttachments uint32 = 1 << iota
	tfAuthorID
	tfConversationID
	tfCreatedAt
	tfEditControls
	tfEntities
	tfInReplyToUserID
	tfLang
	tfNoteTweet
	tfPossiblySensitive
	tfPublicMetrics
	tfReferencedTweets
	tfReplySettings
	tfDisplayTextRange
	tfNonPublicMetrics
	tfOrganicMetrics
	tfPromotedMetrics
	tfArticle
	tfArticleTitle
)

var tweetFields = map[string]uint32{
	"article": tfArticle, "attachments": tfAttachments, "author_id": tfAuthorID, "card_uri": 0,
	"community_id": 0, "context_annotations": 0, "conversation_id": tfConversationID,
	"created_at": tfCreatedAt, "display_text_range": tfDisplayTextRange, "edit_controls": tfEditControls,
	"edit_history_tweet_ids": 0, "entities": tfEntities, "geo": 0, "id": 0,
	"in_reply_to_user_id": tfInReplyToUserID, "lang": tfLang, "media_metadata": 0,
	"non_public_metrics": tfNonPublicMetrics, "note_tweet": tfNoteTweet,
	"organic_metrics": tfOrganicMetrics, "possibly_sensitive": tfPossiblySensitive,
	"promoted_metrics": tfPromotedMetrics, "public_metrics": tfPublicMetrics,
	"referenced_tweets": tfReferencedTweets, "reply_settings": tfReplySettings, "scopes": 0,
	"source": 0, "text": 0, "withheld": 0, "matched_media_notes": 0, "note_request_suggestions": 0,
	"paid_partnership": 0, "suggested_source_links": 0, "suggested_source_links_with_counts": 0,
}

// postFields are the post fields of the posts naming (post.fields): no
// author_id, in_reply_to_user_id, referenced_tweets nor edit history ids,
// which it offers as expansions only.
var postFields = map[string]uint32{
	"article": tfArticle, "article_title": tfArticleTitle, "attachments": tfAttachments, "card_uri": 0,
	"community_id": 0, "context_annotations": 0, "conversation_id": tfConversationID,
	"created_at": tfCreatedAt, "display_text_range": tfDisplayTextRange, "edit_controls": tfEditControls,
	"entities": tfEntities, "geo": 0, "id": 0, "lang": tfLang, "matched_media_notes": 0, "media_metadata": 0,
	"non_public_metrics": tfNonPublicMetrics, "note_post": tfNoteTweet, "note_request_suggestions": 0,
	"organic_metrics": tfOrganicMetrics, "paid_partnership": 0, "possibly_sensitive": tfPossiblySensitive,
	"promoted_metrics": tfPromotedMetrics, "public_metrics": tfPublicMetrics, "reply_settings": tfReplySettings,
	"scopes": 0, "source": 0, "suggested_source_links": 0, "suggested_source_links_with_counts": 0,
	"text": 0, "withheld": 0,
}

const (
	ufCreatedAt uint32 = 1 << iota
	ufDescription
	ufLocation
	ufProfileImageURL
	ufProtected
	ufPublicMetrics
	ufURL
	ufVerified
	ufVerifiedType
)

var userFields = map[string]uint32{
	"affiliation": 0, "confirmed_email": 0, "connection_status": 0, "created_at": ufCreatedAt,
	"description": ufDescription, "entities": 0, "id": 0, "location": ufLocation,
	"most_recent_tweet_id": 0, "name": 0, "parody": 0, "pinned_tweet_id": 0,
	"profile_banner_url": 0, "profile_image_url": ufProfileImageURL, "protected": ufProtected,
	"public_metrics": ufPublicMetrics, "receives_your_dm": 0, "subscription": 0,
	"subscription_type": 0, "url": ufURL, "username": 0, "verified": ufVerified,
	"verified_followers_count": 0, "verified_type": ufVerifiedType, "withheld": 0, "is_identity_verified": 0,
}

// postsUserFields are the user fields of the posts naming.
var postsUserFields = map[string]uint32{
	"confirmed_email": 0, "connection_status": 0, "created_at": ufCreatedAt, "description": ufDescription,
	"entities": 0, "id": 0, "is_identity_verified": 0, "location": ufLocation, "name": 0, "parody": 0,
	"profile_banner_url": 0, "profile_image_url": ufProfileImageURL, "protected": ufProtected,
	"public_metrics": ufPublicMetrics, "receives_your_dm": 0, "subscribes_to_you": 0, "subscription": 0,
	"subscription_type": 0, "url": ufURL, "username": 0, "verified": ufVerified,
	"verified_followers_count": 0, "verified_type": ufVerifiedType, "withheld": 0,
}

const (
	mfAltText uint32 = 1 << iota
	mfDurationMS
	mfHeight
	mfPreviewImageURL
	mfPublicMetrics
	mfURL
	mfVariants
	mfWidth
)

var mediaFields = map[string]uint32{
	"alt_text": mfAltText, "duration_ms": mfDurationMS, "height": mfHeight, "media_key": 0,
	"non_public_metrics": 0, "organic_metrics": 0, "preview_image_url": mfPreviewImageURL,
	"promoted_metrics": 0, "public_metrics": mfPublicMetrics, "type": 0, "url": mfURL,
	"variants": mfVariants, "width": mfWidth,
}

var pollFields = map[string]uint32{
	"duration_minutes": 0, "end_datetime": 0, "id": 0, "options": 0, "voting_status": 0,
}

var placeFields = map[string]uint32{
	"contained_within": 0, "country": 0, "country_code": 0, "full_name": 0, "geo": 0,
	"id": 0, "name": 0, "place_type": 0,
}

const (
	exAuthorID uint32 = 1 << iota
	exMediaKeys
	exReferencedTweets
	exReferencedAuthors
	exInReplyToUser
	exRefMediaKeys
	exArticleCover
	exArticleEntities
)

var expansionNames = map[string]uint32{
	"article.cover_media": exArticleCover, "article.media_entities": exArticleEntities,
	"attachments.media_keys": exMediaKeys, "attachments.media_source_tweet": 0,
	"attachments.poll_ids": 0, "author_id": exAuthorID, "edit_history_tweet_ids": 0,
	"entities.mentions.username": 0, "entities.note.mentions.username": 0, "geo.place_id": 0,
	"in_reply_to_user_id": exInReplyToUser, "referenced_tweets.id": exReferencedTweets,
	"referenced_tweets.id.attachments.media_keys": exReferencedTweets | exRefMediaKeys,
	"referenced_tweets.id.author_id":              exReferencedTweets | exReferencedAuthors,
}

// postExpansions are the expansions of the posts naming. An expansion of an
// id field also returns the field: it is the only way to ask for
// author_id, in_reply_to_user_id and referenced_posts.
var postExpansions = map[string]uint32{
	"article.cover_media": exArticleCover, "article.media_entities": exArticleEntities,
	"attachments.media_keys": exMediaKeys, "attachments.media_source_tweet": 0,
	"attachments.poll_ids": 0, "author_id": exAuthorID, "edit_history_post_ids": 0,
	"entities.mentions.username": 0, "geo.place_id": 0, "in_reply_to_user_id": exInReplyToUser,
	"referenced_posts": exReferencedTweets, "username": 0,
}

// fieldSpec is the parsed field selection of one request.
type fieldSpec struct {
	tf, uf, mf, ex uint32
	private        []string // requested private metric fields (non_public_metrics, ...)
	posts          bool     // the posts naming: answered in its names
}

// paramErrors accumulates 400 messages in the real API's shape.
type paramErrors struct {
	items []paramError
}

type paramError struct {
	param, value, message string
}

func (p *paramErrors) add(param, value, message string) {
	p.items = append(p.items, paramError{param, value, message})
}

func (p *paramErrors) empty() bool { return len(p.items) == 0 }

func sortedNames(m map[string]uint32) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

// parseList parses a comma-separated field list against the known names.
func parseList(q url.Values, param string, known map[string]uint32, perr *paramErrors) (bits uint32, names []string) {
	vals, ok := q[param]
	if !ok {
		return 0, nil
	}
	for _, v := range vals {
		if v == "" {
			continue
		}
		for name := range strings.SplitSeq(v, ",") {
			b, ok := known[name]
			if !ok {
				perr.add(param, name, "The `"+param+"` query parameter value ["+name+"] is not one of ["+sortedNames(known)+"]")
				continue
			}
			bits |= b
			names = append(names, name)
		}
	}
	return bits, names
}

// checkParams rejects query parameters the operation does not accept.
func checkParams(q url.Values, allowed []string, perr *paramErrors) {
	for k, v := range q {
		if !slices.Contains(allowed, k) {
			val := ""
			if len(v) > 0 {
				val = v[0]
			}
			perr.add(k, val, "The query parameter ["+k+"] is not one of ["+strings.Join(allowed, ",")+"]")
		}
	}
}

// parseMaxResults validates max_results (default def, 1..100).
func parseMaxResults(q url.Values, def int, perr *paramErrors) int {
	vals, ok := q["max_results"]
	if !ok || len(vals) == 0 {
		return def
	}
	v := vals[0]
	n, err := strconv.Atoi(v)
	if err != nil {
		perr.add("max_results", v, "The `max_results` query parameter value ["+v+"] is not a number between 1 and 100")
		return def
	}
	if n < 1 || n > 100 {
		perr.add("max_results", v, "The `max_results` query parameter value ["+v+"] is not between 1 and 100")
		return def
	}
	return n
}

// Query parameters of the operations, by naming.
var (
	listParams      = []string{"expansions", "max_results", "media.fields", "pagination_token", "place.fields", "poll.fields", "tweet.fields", "user.fields"}
	postsListParams = []string{"expansions", "max_results", "media.fields", "pagination_token", "place.fields", "poll.fields", "post.fields", "user.fields"}
	pageParams      = []string{"max_results", "pagination_token"}
	meParams        = []string{"expansions", "tweet.fields", "user.fields"}
	postsMeParams   = []string{"expansions", "post.fields", "user.fields"}
)

// namingPosts is the Options.Naming of X's OpenAPI description 2.167.
const namingPosts = "posts"

// parseFieldSpec parses the field-selection parameters of the list
// operation, in the tweets naming or, with posts, the posts naming.
func parseFieldSpec(q url.Values, perr *paramErrors, posts bool) fieldSpec {
	fs := fieldSpec{posts: posts}
	postParam, known, users, expansions := "tweet.fields", tweetFields, userFields, expansionNames
	if posts {
		postParam, known, users, expansions = "post.fields", postFields, postsUserFields, postExpansions
	}
	var names []string
	fs.tf, names = parseList(q, postParam, known, perr)
	for _, n := range names {
		if known[n]&(tfNonPublicMetrics|tfOrganicMetrics|tfPromotedMetrics) != 0 && !slices.Contains(fs.private, n) {
			fs.private = append(fs.private, n)
		}
	}
	fs.uf, _ = parseList(q, "user.fields", users, perr)
	fs.mf, _ = parseList(q, "media.fields", mediaFields, perr)
	parseList(q, "poll.fields", pollFields, perr)
	parseList(q, "place.fields", placeFields, perr)
	fs.ex, _ = parseList(q, "expansions", expansions, perr)
	if posts {
		// The id fields come with their expansions.
		for ex, tf := range map[uint32]uint32{exAuthorID: tfAuthorID, exInReplyToUser: tfInReplyToUserID, exReferencedTweets: tfReferencedTweets} {
			if fs.ex&ex != 0 {
				fs.tf |= tf
			}
		}
	}
	return fs
}
