package userapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/libs/tokenauth"

	"github.com/eventreg/eventreg/services/users/internal/user"
)

// OpenID Connect's scopes (OpenID Connect Core §5.4). A token reaches
// UserInfo only with ScopeOpenID; each claim scope, or the pii: scope a user
// consents to for the same data, adds its claims (decision 0102).
const (
	ScopeOpenID      = "openid"
	scopeOIDCProfile = "profile"
	scopeOIDCEmail   = "email"
	scopeOIDCPhone   = "phone"
	scopeOIDCAddress = "address"
)

// PathUserInfo is the OpenID Connect UserInfo endpoint. It lives under
// /api/users/, which the gateway routes here, beside the current-user view
// it renders the same user for.
const PathUserInfo = "/api/users/userinfo"

// userInfo serves GET and POST /api/users/userinfo (Core §5.3): the
// token's user by the scopes it holds, the bearer token in the
// Authorization header only (RFC 6750 §2.1; the middleware answers its
// errors with WWW-Authenticate).
func (h *Handler) userInfo(c *gin.Context) {
	claims := tokenauth.FromContext(c)
	if claims.UserID == 0 {
		apireply.Abort(c, apierror.Forbidden("UserInfo needs a token issued on behalf of a user."))
		return
	}
	u, err := h.Users.Get(c.Request.Context(), claims.UserID)
	if err != nil {
		h.reply.Error(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, userInfoView(u, claims.HasScope))
}

// userInfoView renders u's standard claims (Core §5.1) for the scopes
// hasScope holds. A claim whose value is unknown is left out, never null.
func userInfoView(u user.User, hasScope func(string) bool) gin.H {
	either := func(oidc, pii string) bool { return hasScope(oidc) || hasScope(pii) }
	v := gin.H{"sub": strconv.FormatInt(u.ID, 10)}
	if either(scopeOIDCProfile, ScopeProfile) {
		v["name"] = strings.TrimSpace(u.FirstName + " " + u.LastName)
		v["given_name"] = u.FirstName
		v["family_name"] = u.LastName
		v["preferred_username"] = u.Username
		if u.PreferredName != nil && *u.PreferredName != "" {
			v["nickname"] = *u.PreferredName
		}
		if u.ProfilePictureURL != nil && *u.ProfilePictureURL != "" {
			v["picture"] = *u.ProfilePictureURL
		}
		if !u.BornAt.IsZero() {
			v["birthdate"] = u.BornAt.UTC().Format(time.DateOnly)
		}
		if !u.UpdatedAt.IsZero() {
			v["updated_at"] = u.UpdatedAt.Unix()
		}
	}
	if either(scopeOIDCEmail, ScopeEmail) {
		v["email"] = u.Email
		v["email_verified"] = u.EmailVerified
	}
	if either(scopeOIDCPhone, ScopePhone) && u.Phone != nil && *u.Phone != "" {
		v["phone_number"] = *u.Phone
		// Nothing here verifies phone numbers: an app must not take it for verified.
		v["phone_number_verified"] = false
	}
	if either(scopeOIDCAddress, ScopeAddress) && u.Address != nil {
		a := u.Address
		street := a.Line1
		if a.Line2 != nil && *a.Line2 != "" {
			street += "\n" + *a.Line2
		}
		var lines []string
		for _, l := range []string{street, strings.TrimSpace(a.Zipcode + " " + a.City), a.State, a.Country} {
			if l != "" {
				lines = append(lines, l)
			}
		}
		v["address"] = gin.H{"street_address": street, "locality": a.City, "region": a.State, "postal_code": a.Zipcode, "country": a.Country,
			"formatted": strings.Join(lines, "\n")}
	}
	return v
}
