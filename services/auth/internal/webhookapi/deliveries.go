package webhookapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/libs/page"

	"github.com/eventreg/eventreg/services/auth/internal/webhook"
)

// deliveriesQuery names the deliveries' cursors (a cursor is bound to it
// and to its filter).
const deliveriesQuery = "webhooks.deliveries"

// deliveriesFilter is what a deliveries cursor is bound to.
type deliveriesFilter struct {
	Subscription string `json:"s"`
	State        string `json:"st"`
}

func (h *Handler) deliveries(c *gin.Context) {
	limit, e := page.ParseLimit(c.Query("limit"))
	if e != nil {
		apireply.Abort(c, e)
		return
	}
	state := webhook.DeliveryState(c.Query("state"))
	id, _ := webhook.ParseID(c.Param("id"))
	filter := deliveriesFilter{Subscription: id, State: string(state)}
	pager := page.Paginator{Codec: h.Cursor, Query: deliveriesQuery}
	var next *string
	if v, ok := c.GetQuery("nextPage"); ok {
		next = &v
	}
	ks, e := pager.Start(next, limit, filter)
	if e != nil {
		apireply.Abort(c, e)
		return
	}
	ds, more, err := h.Webhooks.Deliveries(c.Request.Context(), owner(c), c.Param("id"), state, ks.After, ks.Limit)
	if err != nil {
		h.fail(c, err)
		return
	}
	var last int64
	if len(ds) > 0 {
		last = ds[len(ds)-1].Seq
	}
	c.JSON(http.StatusOK, page.Render(pager, ds, last, more, filter, renderDelivery))
}

func (h *Handler) replay(c *gin.Context) {
	d, err := h.Webhooks.Replay(c.Request.Context(), owner(c), c.Param("id"), c.Param("deliveryId"))
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, renderDelivery(d))
}

// replayedJSON answers a replay of every dead delivery.
type replayedJSON struct {
	Replayed int `json:"replayed"`
}

func (h *Handler) replayDead(c *gin.Context) {
	n, err := h.Webhooks.ReplayDead(c.Request.Context(), owner(c), c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, replayedJSON{Replayed: n})
}
