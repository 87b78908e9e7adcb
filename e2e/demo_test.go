package e2e

// The demo fixture's apps and users the tests act as (deploy/fixtures/demo.json).
const (
	// Service apps (client credentials).
	trackerID        = "501"
	trackerSecret    = "a-long-random-demo-secret-of-at-least-32-chars"
	readerID         = "504" // approved for registration:read only
	readerSecret     = "a-fourth-long-random-demo-secret-of-32-chars"
	dealerDeskID     = "505" // vendor:read
	dealerDeskSecret = "a-fifth-long-random-demo-secret-of-32-chars"
	volSyncID        = "511" // order:view volunteer:read
	volSyncSecret    = "a-sixth-long-random-demo-secret-of-32-chars"

	// Apps acting for a user (OBO); they redirect to authRedirectURI.
	authBadgeID     = "502" // pii:basic pii:email pii:address pii:phone
	authBadgeSecret = "another-long-random-demo-secret-of-32-chars"
	authStaffID     = "503" // pii:basic pii:email user:read registration:read
	authStaffSecret = "a-third-long-random-demo-secret-of-32-chars"
	companionID     = "510" // pii:basic con:read pii:finance:read admin:ticket:read admin:ticket:scan
	companionSecret = "a-seventh-long-random-demo-secret-of-32-chars"

	// OpenID Connect apps.
	oidcWikiID      = "520" // openid profile email phone address; RS256 ID tokens
	oidcWikiSecret  = "an-eighth-long-random-demo-secret-of-32-chars"
	oidcForumID     = "521" // ES256 ID tokens
	oidcForumSecret = "a-ninth-long-random-demo-secret-of-32-chars"

	// The apps' redirect URI, served by startAuthCallback.
	authCallbackAddr = "127.0.0.1:9999"
	authRedirectURI  = "http://127.0.0.1:9999/callback"

	// Users.
	authAlice     = "alice" // 1001, admin
	authAlicePass = "correct horse battery staple"
	authBob       = "bob" // 1002
	authBobPass   = "bob demo password 2026"
	authCarol     = "carol" // 1003, staff
	authCarolPass = "carol demo password 2026"
)
