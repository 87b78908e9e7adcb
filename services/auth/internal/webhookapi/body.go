package webhookapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"sort"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/jsonbody"
)

// maxAPIBody bounds the body of a subscription request.
const maxAPIBody = 64 << 10

// readBody reads a JSON request body of at most limit bytes.
func readBody(c *gin.Context, limit int64) ([]byte, *apierror.Error) {
	if ct := c.GetHeader("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return nil, apierror.UnsupportedMediaType("application/json")
		}
	}
	if c.Request.ContentLength > limit {
		return nil, apierror.BodyTooLarge(limit)
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, apierror.BodyTooLarge(mbe.Limit)
		}
		return nil, apierror.Validation("The request body could not be read.", nil)
	}
	return body, nil
}

// object is a JSON object body by member, each member read once with the
// type it must have; problems are gathered by field.
type object struct {
	members  map[string]json.RawMessage
	problems map[string]string
}

// readObject reads the body as a JSON object (jsonbody's rules: UTF-8,
// depth, no duplicate keys) whose members are among allowed.
func readObject(c *gin.Context, allowed ...string) (*object, *apierror.Error) {
	body, e := readBody(c, maxAPIBody)
	if e != nil {
		return nil, e
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, apierror.Validation("A JSON body is required.", nil)
	}
	if err := jsonbody.Check(body); err != nil {
		return nil, apierror.Validation(err.Error(), nil)
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(body, &members) != nil || members == nil {
		return nil, apierror.Validation("The request body must be a JSON object.", nil)
	}
	o := &object{members: members, problems: map[string]string{}}
	var unknown []string
	for k := range members {
		if !contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		fields := map[string]string{}
		for _, k := range unknown {
			fields[k] = "is not a field of this request (fields: " + strings.Join(allowed, ", ") + ")"
		}
		return nil, apierror.Validation("The request body has an unknown field.", fields)
	}
	return o, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
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
