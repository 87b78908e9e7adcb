package pagesapi

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/ratelimit"

	"github.com/eventreg/eventreg/services/auth/internal/session"
	"github.com/eventreg/eventreg/services/auth/internal/signin"
)

// safeNext keeps a post-login destination on this server's pages.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/oauth/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/oauth/apps"
	}
	return next
}

func (h *Handler) renderLogin(c *gin.Context, status int, next, clientName, username, msg string) {
	h.render(c, status, h.pages.login, map[string]any{"Title": "Sign in", "CSRF": h.csrfToken(c), "Next": safeNext(next),
		"ClientName": clientName, "Username": username, "Error": msg})
}

func (h *Handler) loginPage(c *gin.Context) {
	h.renderLogin(c, http.StatusOK, c.Query("next"), "", "", "")
}

const badCredentials = "The username or password is incorrect."

func (h *Handler) tooManyAttempts(c *gin.Context, wait time.Duration) {
	secs := int((wait + time.Second - 1) / time.Second)
	c.Header("Retry-After", strconv.Itoa(secs))
	h.message(c, http.StatusTooManyRequests, "Too many attempts", "Too many sign-in attempts", "Sign-in is paused after repeated failures.",
		"Please wait "+strconv.Itoa((secs+59)/60)+" minute(s) and try again.")
}

// login handles the sign-in form.
func (h *Handler) login(c *gin.Context) {
	next := safeNext(c.PostForm("next"))
	login := c.PostForm("username")
	if !h.csrfValid(c) {
		h.csrfFailed(c)
		return
	}
	old, _ := h.cookie(c, sessionCookie)
	sess, err := h.rules.SignIn.SignIn(c.Request.Context(), signin.Attempt{Login: login, Password: c.PostForm("password"),
		Address: ratelimit.AddressKey(c.ClientIP()), Replaces: old})
	var paused *signin.PausedError
	switch {
	case errors.Is(err, signin.ErrBadCredentials):
		h.renderLogin(c, http.StatusBadRequest, next, "", signin.Identifier(login), badCredentials)
		return
	case errors.As(err, &paused):
		h.tooManyAttempts(c, paused.Wait)
		return
	case err != nil:
		h.log.WarnContext(c.Request.Context(), "signing in failed", "error", err.Error())
		h.unavailable(c)
		return
	}
	h.setCookie(c, sessionCookie, sess.ID, 0)
	// A new CSRF anchor: a form token obtained before sign-in is worthless after it.
	h.setCookie(c, csrfCookie, newAnchor(), 0)
	c.Redirect(http.StatusSeeOther, next)
}

// currentSession returns the browser's session, nil when it has none. When
// the session store cannot answer it answers 503, and ok is false.
func (h *Handler) currentSession(c *gin.Context) (sess *session.Session, ok bool) {
	id, _ := h.cookie(c, sessionCookie)
	sess, err := h.rules.SignIn.Current(c.Request.Context(), id)
	if err != nil {
		h.log.WarnContext(c.Request.Context(), "reading session failed", "error", err.Error())
		h.unavailable(c)
		return nil, false
	}
	return sess, true
}

// formSession checks the CSRF token of a form that needs a signed-in user
// and returns the session; without one the browser goes to signIn. ok is
// false when it answered.
func (h *Handler) formSession(c *gin.Context, signIn string) (sess *session.Session, ok bool) {
	if !h.csrfValid(c) {
		h.csrfFailed(c)
		return nil, false
	}
	if sess, ok = h.currentSession(c); !ok {
		return nil, false
	}
	if sess == nil {
		c.Redirect(http.StatusSeeOther, signIn)
		return nil, false
	}
	return sess, true
}
