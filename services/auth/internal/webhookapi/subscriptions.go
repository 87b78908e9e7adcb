package webhookapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/libs/page"

	"github.com/eventreg/eventreg/services/auth/internal/webhook"
)

func (h *Handler) create(c *gin.Context) {
	o, e := readObject(c, "url", "events", "description", "format")
	if e != nil {
		apireply.Abort(c, e)
		return
	}
	var n webhook.NewSubscription
	if u := o.string("url", false); u != nil {
		n.URL = *u
	}
	n.Events = o.strings("events")
	if d := o.string("description", true); d != nil {
		n.Description = *d
	}
	if f := o.string("format", false); f != nil {
		if *f == "" { // absent is the default; "" is a mistake
			o.problems["format"] = `must be "eventreg" or "concat"`
		}
		n.Format = webhook.Format(*f)
	}
	if e := o.err(); e != nil {
		apireply.Abort(c, e)
		return
	}
	sub, err := h.Webhooks.Create(c.Request.Context(), owner(c), n)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.Header("Location", PathSubscriptions+"/"+sub.ID)
	c.JSON(http.StatusCreated, renderSubscription(sub))
}

func (h *Handler) list(c *gin.Context) {
	subs, err := h.Webhooks.List(c.Request.Context(), owner(c))
	if err != nil {
		h.fail(c, err)
		return
	}
	// At most webhook.MaxSubscriptions: always one page.
	resp := page.Response[subscriptionJSON]{Data: make([]subscriptionJSON, len(subs))}
	for i, s := range subs {
		resp.Data[i] = renderSubscription(s)
	}
	c.JSON(http.StatusOK, resp)
}

func (h *Handler) get(c *gin.Context) {
	sub, err := h.Webhooks.Get(c.Request.Context(), owner(c), c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, renderSubscription(sub))
}

func (h *Handler) update(c *gin.Context) {
	o, e := readObject(c, "url", "events", "description", "state", "format")
	if e != nil {
		apireply.Abort(c, e)
		return
	}
	var ch webhook.Change
	ch.URL = o.string("url", false)
	if o.has("events") {
		ch.Events = o.strings("events")
	}
	if o.null("description") {
		empty := "" // null clears the description
		ch.Description = &empty
	} else {
		ch.Description = o.string("description", false)
	}
	if f := o.string("format", false); f != nil {
		format := webhook.Format(*f)
		ch.Format = &format
	}
	if s := o.string("state", false); s != nil {
		st := webhook.State(*s)
		ch.State = &st
	}
	if e := o.err(); e != nil {
		apireply.Abort(c, e)
		return
	}
	if len(o.members) == 0 {
		apireply.Abort(c, apierror.Validation("Send at least one of url, events, description, state, format.", nil))
		return
	}
	sub, err := h.Webhooks.Update(c.Request.Context(), owner(c), c.Param("id"), ch)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, renderSubscription(sub))
}

func (h *Handler) delete(c *gin.Context) {
	if err := h.Webhooks.Delete(c.Request.Context(), owner(c), c.Param("id")); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
