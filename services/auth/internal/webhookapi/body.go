package webhookapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/jsonbody"
)

// maxAPIBody bounds the body of a subscription request.
const maxAPIBody = 64 << 10

// readJSON reads a JSON request body of at most limit bytes by jsonbody's
// rules (content type, size, UTF-8, depth, no duplicate keys, one value).
func readJSON(c *gin.Context, limit int64) (json.RawMessage, *apierror.Error) {
	if c.Request.Body != nil {
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, limit)
	}
	var raw json.RawMessage
	if e := jsonbody.Decode(c, &raw, jsonbody.Options{}); e != nil {
		return nil, e
	}
	return raw, nil
}

// object is a JSON object body by member, each member read once with the
// type it must have; problems are gathered by field.
type object struct {
	members  map[string]json.RawMessage
	problems map[string]string
}

// readObject reads the body as a JSON object (readJSON's rules) whose
// members are among allowed.
func readObject(c *gin.Context, allowed ...string) (*object, *apierror.Error) {
	body, e := readJSON(c, maxAPIBody)
	if e != nil {
		return nil, e
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(body, &members) != nil || members == nil {
		return nil, apierror.Validation("The request body must be a JSON object.", nil)
	}
	unknown := map[string]string{}
	for k := range members {
		if !slices.Contains(allowed, k) {
			unknown[k] = "is not a field of this request (fields: " + strings.Join(allowed, ", ") + ")"
		}
	}
	if len(unknown) > 0 {
		return nil, apierror.Validation("The request body has an unknown field.", unknown)
	}
	return &object{members: members, problems: map[string]string{}}, nil
}

// has reports whether the body carries name.
func (o *object) has(name string) bool { _, ok := o.members[name]; return ok }

// null reports whether the body carries name as null.
func (o *object) null(name string) bool { return string(o.members[name]) == "null" }

// string reads member name: nil when absent, or when null and nullable.
func (o *object) string(name string, nullable bool) *string {
	raw, ok := o.members[name]
	if !ok || (nullable && string(raw) == "null") {
		return nil
	}
	var s string
	if string(raw) == "null" || json.Unmarshal(raw, &s) != nil {
		o.problems[name] = "must be a string"
		return nil
	}
	return &s
}

// strings reads member name as an array of strings (nil when absent).
func (o *object) strings(name string) []string {
	raw, ok := o.members[name]
	if !ok {
		return nil
	}
	var list []string
	if string(raw) == "null" || json.Unmarshal(raw, &list) != nil {
		o.problems[name] = "must be an array of strings"
		return nil
	}
	if list == nil {
		list = []string{}
	}
	return list
}

// err is the 400 of the type problems found, nil when none.
func (o *object) err() *apierror.Error {
	if len(o.problems) == 0 {
		return nil
	}
	return apierror.Validation("The request body has a field of the wrong type.", o.problems)
}
