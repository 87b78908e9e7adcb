package webhookapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/libs/authapi"

	"github.com/eventreg/eventreg/services/auth/internal/webhook"
)

// MaxEventBatchBytes bounds the body of POST /internal/events (the
// listener's BODY_LIMIT_BYTES applies first when it is lower).
const MaxEventBatchBytes = 8 << 20

// ingest takes a batch of committed events from a resource service's
// outbox relay: all stored, or none (and a 4xx).
func (h *Handler) ingest(c *gin.Context) {
	body, e := readJSON(c, MaxEventBatchBytes)
	if e != nil {
		apireply.Abort(c, e)
		return
	}
	batch, e := decodeBatch(body)
	if e != nil {
		apireply.Abort(c, e)
		return
	}
	// The whole batch is checked before its sign-outs act.
	if err := webhook.CheckBatch(batch.Events); err != nil {
		h.fail(c, err)
		return
	}
	if err := h.signOut(c, batch.Events); err != nil {
		h.fail(c, err)
		return
	}
	n, err := h.Webhooks.Ingest(c.Request.Context(), batch.Events)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, authapi.EventsAccepted{Accepted: n})
}

// decodeBatch decodes an EventBatch (a body readJSON accepted) strictly:
// no unknown field, "events" required.
func decodeBatch(body []byte) (authapi.EventBatch, *apierror.Error) {
	var batch authapi.EventBatch
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&batch); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te) && te.Field != "":
			return batch, apierror.Validation("The event batch has a field of the wrong type.", map[string]string{te.Field: "has the wrong type"})
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return batch, apierror.Validation("The event batch has an unknown field: "+strings.TrimPrefix(err.Error(), "json: unknown field ")+".", nil)
		}
		if !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
			return batch, apierror.Validation(`The event batch must be a JSON object {"events": [...]}.`, nil)
		}
		return batch, apierror.Validation("The event batch could not be decoded: "+strings.TrimPrefix(err.Error(), "json: ")+".", nil)
	}
	if batch.Events == nil {
		return batch, apierror.Validation("events is required.", map[string]string{"events": "is required"})
	}
	return batch, nil
}

// signOut signs out the user of every EventUserSignedOut event of batch,
// before anything of the batch is stored: when it fails, the relay sends
// the batch again (signing out twice ends nothing more). A malformed one
// is refused with the batch.
func (h *Handler) signOut(c *gin.Context, batch []authapi.Event) error {
	var users []int64
	for i, e := range batch {
		if e.Type != authapi.EventUserSignedOut {
			continue
		}
		var d authapi.SignOut
		dec := json.NewDecoder(bytes.NewReader(e.Data))
		dec.DisallowUnknownFields()
		if dec.Decode(&d) != nil || d.UserID <= 0 {
			field := "events[" + strconv.Itoa(i) + "].data"
			return apierror.Validation("The event batch is not valid; nothing was stored.",
				map[string]string{field: `must be {"userId": a positive integer, "reason": text}`})
		}
		if !slices.Contains(users, d.UserID) {
			users = append(users, d.UserID)
		}
	}
	if len(users) > 0 && h.SignOut == nil {
		return apierror.Unavailable("Signing users out")
	}
	for _, id := range users {
		if err := h.SignOut(c.Request.Context(), id); err != nil {
			return err
		}
	}
	return nil
}
