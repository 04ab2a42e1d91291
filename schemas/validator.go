package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The validator: JSON Schema (draft 2020-12, and the draft-07 spellings of
// tuple items and dependencies) compiled into a tree of schemaNode and
// checked against decoded JSON. It is the package's own so that an agent
// program links no general-purpose schema library (a lean binary, see
// examples/goagent's lean test); its answers are checked against such a
// library in the tests (validator_test.go).

// schemaNode is one compiled schema or subschema. A nil constraint is
// absent. Compiled nodes are immutable and safe for concurrent use.
type schemaNode struct {
	always *bool // a boolean schema: true accepts anything, false nothing

	types          []string
	enum           []any
	hasConst       bool
	constV         any
	ref            *schemaNode
	allOf          []*schemaNode
	anyOf          []*schemaNode
	oneOf          []*schemaNode
	not            *schemaNode
	ifS, then, els *schemaNode

	// Objects.
	properties     map[string]*schemaNode
	patternProps   []patternSchema
	additional     *schemaNode
	required       []string
	propertyNames  *schemaNode
	minProps       int
	maxProps       int // -1: no bound
	depRequired    map[string][]string
	depSchemas     map[string]*schemaNode
	dependentOrder []string

	// Arrays.
	prefixItems []*schemaNode
	items       *schemaNode
	contains    *schemaNode
	minContains int
	maxContains int // -1: no bound
	minItems    int
	maxItems    int // -1: no bound
	unique      bool

	// Strings.
	minLength int
	maxLength int // -1: no bound
	pattern   *regexp.Regexp
	format    string

	// Numbers.
	minimum, maximum, exclMin, exclMax, multipleOf *big.Rat
}

type patternSchema struct {
	re *regexp.Regexp
	s  *schemaNode
}

// unsupportedKeywords constrain instances in ways this validator does not
// implement; a schema that uses one is refused when compiled (never
// accepted and silently unchecked).
var unsupportedKeywords = []string{"unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef"}

// compiler compiles schema documents. docs holds every document by its
// absolute URL (no fragment); nodes the compiled schemas by URL and JSON
// pointer, so that a recursive $ref reaches the node being compiled.
type compiler struct {
	docs   map[string]any
	parent *compiler // documents known to every compile (the embedded ones)
	nodes  map[string]*schemaNode
}

func newCompiler(parent *compiler) *compiler {
	return &compiler{docs: map[string]any{}, parent: parent, nodes: map[string]*schemaNode{}}
}

// decodeJSON decodes doc keeping numbers exact (json.Number).
func decodeJSON(doc []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("more than one JSON value")
	}
	if _, err := d.Token(); err == nil {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// addResource adds a decoded document under its absolute URL, and under
// the ids its subschemas declare.
func (c *compiler) addResource(u string, doc any) {
	c.docs[u] = doc
	c.indexIDs(u, doc)
}

func (c *compiler) indexIDs(base string, v any) {
	switch v := v.(type) {
	case map[string]any:
		if id, ok := v["$id"].(string); ok && id != "" {
			if abs, err := resolveURL(base, id); err == nil {
				abs, _, _ = strings.Cut(abs, "#")
				if _, known := c.docs[abs]; !known {
					c.docs[abs] = v
				}
				base = abs
			}
		}
		for k, sub := range v {
			if k == "enum" || k == "const" || k == "examples" || k == "default" {
				continue
			}
			c.indexIDs(base, sub)
		}
	case []any:
		for _, sub := range v {
			c.indexIDs(base, sub)
		}
	}
}

func (c *compiler) doc(u string) (any, bool) {
	if d, ok := c.docs[u]; ok {
		return d, true
	}
	if c.parent != nil {
		return c.parent.doc(u)
	}
	return nil, false
}

func resolveURL(base, ref string) (string, error) {
	r, err := url.Parse(ref)
	if err != nil {
		return "", err
	}
	if r.IsAbs() {
		return r.String(), nil
	}
	b, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	return b.ResolveReference(r).String(), nil
}

// compile returns the schema at u (an absolute URL, with an optional
// fragment: a JSON pointer or an $anchor).
func (c *compiler) compile(u string) (*schemaNode, error) {
	docURL, frag, _ := strings.Cut(u, "#")
	doc, ok := c.doc(docURL)
	if !ok {
		return nil, fmt.Errorf("$ref %q: no such document (a schema may refer to the embedded documents %s*.schema.json and to its own parts)", u, SchemaBaseURL)
	}
	ptr := frag
	if frag != "" && !strings.HasPrefix(frag, "/") {
		p, found := findAnchor(doc, frag, "")
		if !found {
			return nil, fmt.Errorf("$ref %q: no $anchor %q in %s", u, frag, docURL)
		}
		ptr = p
	}
	key := docURL + "#" + ptr
	if n, ok := c.nodes[key]; ok {
		return n, nil
	}
	v, err := lookupPointer(doc, ptr)
	if err != nil {
		return nil, fmt.Errorf("$ref %q: %w", u, err)
	}
	n := &schemaNode{}
	c.nodes[key] = n
	if err := c.fill(n, docURL, docURL, ptr, v); err != nil {
		delete(c.nodes, key)
		return nil, err
	}
	return n, nil
}

// inPlace lists the schemas n applies to the same value it is given.
func (n *schemaNode) inPlace() []*schemaNode {
	out := slices.Concat(n.allOf, n.anyOf, n.oneOf)
	for _, s := range []*schemaNode{n.ref, n.not, n.ifS, n.then, n.els} {
		if s != nil {
			out = append(out, s)
		}
	}
	for _, prop := range n.dependentOrder {
		if s := n.depSchemas[prop]; s != nil {
			out = append(out, s)
		}
	}
	return out
}

// checkCycles refuses a compile whose schemas reach themselves through
// $ref (or allOf, anyOf, ...) without descending into the value: checking
// any value against one would never end.
func (c *compiler) checkCycles() error {
	const (
		visiting = 1
		done     = 2
	)
	state := map[*schemaNode]int{}
	var visit func(n *schemaNode) bool
	visit = func(n *schemaNode) bool {
		switch state[n] {
		case visiting:
			return true
		case done:
			return false
		}
		state[n] = visiting
		for _, s := range n.inPlace() {
			if visit(s) {
				return true
			}
		}
		state[n] = done
		return false
	}
	for _, key := range slices.Sorted(maps.Keys(c.nodes)) {
		if visit(c.nodes[key]) {
			return schemaError(key, "$ref cycle: the schema refers back to itself without descending into the value")
		}
	}
	return nil
}

func findAnchor(v any, anchor, at string) (string, bool) {
	switch v := v.(type) {
	case map[string]any:
		if a, ok := v["$anchor"].(string); ok && a == anchor {
			return at, true
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if k == "enum" || k == "const" {
				continue
			}
			if p, ok := findAnchor(v[k], anchor, at+"/"+escapePointer(k)); ok {
				return p, true
			}
		}
	case []any:
		for i, sub := range v {
			if p, ok := findAnchor(sub, anchor, at+"/"+strconv.Itoa(i)); ok {
				return p, true
			}
		}
	}
	return "", false
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func lookupPointer(doc any, ptr string) (any, error) {
	if ptr == "" {
		return doc, nil
	}
	v := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok, err := url.PathUnescape(tok)
		if err != nil {
			return nil, fmt.Errorf("bad JSON pointer %q", ptr)
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch cur := v.(type) {
		case map[string]any:
			next, ok := cur[tok]
			if !ok {
				return nil, fmt.Errorf("nothing at %q", ptr)
			}
			v = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(cur) {
				return nil, fmt.Errorf("nothing at %q", ptr)
			}
			v = cur[i]
		default:
			return nil, fmt.Errorf("nothing at %q", ptr)
		}
	}
	return v, nil
}

// schemaError is a schema that does not compile, at a JSON pointer.
func schemaError(ptr, format string, args ...any) error {
	if ptr == "" {
		ptr = "the root"
	}
	return fmt.Errorf("at %s: %s", ptr, fmt.Sprintf(format, args...))
}

var jsonTypes = []string{"array", "boolean", "integer", "null", "number", "object", "string"}

// fill compiles v, the schema at ptr of the document docURL, into n;
// base is the URL its references resolve against (the nearest $id).
func (c *compiler) fill(n *schemaNode, docURL, base, ptr string, v any) error {
	n.maxProps, n.maxContains, n.maxItems, n.maxLength = -1, -1, -1, -1
	n.minContains = 1
	if b, ok := v.(bool); ok {
		n.always = &b
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return schemaError(ptr, "a schema must be an object or a boolean, not %s", jsonTypeOf(v))
	}
	if id, ok := m["$id"].(string); ok && ptr != "" {
		if abs, err := resolveURL(base, id); err == nil {
			base, _, _ = strings.Cut(abs, "#")
		}
	} else if _, ok := m["$id"]; ok && ptr != "" {
		return schemaError(ptr+"/$id", "$id must be a string")
	}
	var errs []error
	bad := func(kw, format string, args ...any) {
		errs = append(errs, schemaError(ptr+"/"+escapePointer(kw), format, args...))
	}
	sub := func(kw string, sv any) *schemaNode {
		return c.sub(&errs, docURL, base, ptr+"/"+escapePointer(kw), sv)
	}
	subs := func(kw string, sv any) []*schemaNode {
		arr, ok := sv.([]any)
		if !ok || len(arr) == 0 {
			bad(kw, "%s must be a non-empty array of schemas", kw)
			return nil
		}
		out := make([]*schemaNode, len(arr))
		for i, s := range arr {
			out[i] = c.sub(&errs, docURL, base, ptr+"/"+kw+"/"+strconv.Itoa(i), s)
		}
		return out
	}
	count := func(kw string, dst *int) {
		if raw, ok := m[kw]; ok {
			if k, ok := nonNegativeInt(raw); ok {
				*dst = k
			} else {
				bad(kw, "%s must be a non-negative integer", kw)
			}
		}
	}
	number := func(kw string) *big.Rat {
		raw, ok := m[kw]
		if !ok {
			return nil
		}
		r, ok := ratOf(raw)
		if !ok {
			bad(kw, "%s must be a number", kw)
			return nil
		}
		return r
	}
	for _, kw := range unsupportedKeywords {
		if _, ok := m[kw]; ok {
			bad(kw, "keyword %s is not supported by agentmesh's validator; say the same with properties, additionalProperties, items or $ref", kw)
		}
	}
	if raw, ok := m["type"]; ok {
		switch t := raw.(type) {
		case string:
			n.types = []string{t}
		case []any:
			for _, e := range t {
				s, _ := e.(string)
				n.types = append(n.types, s)
			}
		default:
			bad("type", "type must be a string or an array of strings")
		}
		for _, t := range n.types {
			if !slices.Contains(jsonTypes, t) {
				bad("type", "type %q is not a JSON type (use one of %s)", t, strings.Join(jsonTypes, ", "))
			}
		}
	}
	if raw, ok := m["enum"]; ok {
		if arr, ok := raw.([]any); ok {
			n.enum = arr
		} else {
			bad("enum", "enum must be an array")
		}
	}
	if raw, ok := m["const"]; ok {
		n.hasConst, n.constV = true, raw
	}
	if raw, ok := m["$ref"]; ok {
		s, isString := raw.(string)
		if !isString {
			bad("$ref", "$ref must be a string")
		} else if target, err := resolveURL(base, s); err != nil {
			bad("$ref", "$ref %q is not a URL reference: %v", s, err)
		} else if n.ref, err = c.compile(target); err != nil {
			bad("$ref", "%v", err)
		}
	}
	if raw, ok := m["allOf"]; ok {
		n.allOf = subs("allOf", raw)
	}
	if raw, ok := m["anyOf"]; ok {
		n.anyOf = subs("anyOf", raw)
	}
	if raw, ok := m["oneOf"]; ok {
		n.oneOf = subs("oneOf", raw)
	}
	if raw, ok := m["not"]; ok {
		n.not = sub("not", raw)
	}
	if raw, ok := m["if"]; ok {
		n.ifS = sub("if", raw)
		if raw, ok := m["then"]; ok {
			n.then = sub("then", raw)
		}
		if raw, ok := m["else"]; ok {
			n.els = sub("else", raw)
		}
	}
	if raw, ok := m["properties"]; ok {
		props, ok := raw.(map[string]any)
		if !ok {
			bad("properties", "properties must be an object of schemas")
		}
		n.properties = make(map[string]*schemaNode, len(props))
		for name, s := range props {
			n.properties[name] = c.sub(&errs, docURL, base, ptr+"/properties/"+escapePointer(name), s)
		}
	}
	if raw, ok := m["patternProperties"]; ok {
		props, ok := raw.(map[string]any)
		if !ok {
			bad("patternProperties", "patternProperties must be an object of schemas")
		}
		for _, pat := range sortedKeys(props) {
			re, err := regexp.Compile(pat)
			if err != nil {
				bad("patternProperties", "pattern %q does not compile: %v", pat, err)
				continue
			}
			n.patternProps = append(n.patternProps, patternSchema{re, c.sub(&errs, docURL, base, ptr+"/patternProperties/"+escapePointer(pat), props[pat])})
		}
	}
	if raw, ok := m["additionalProperties"]; ok {
		n.additional = sub("additionalProperties", raw)
	}
	if raw, ok := m["required"]; ok {
		names, ok := stringList(raw)
		if !ok {
			bad("required", "required must be an array of strings")
		}
		n.required = names
	}
	if raw, ok := m["propertyNames"]; ok {
		n.propertyNames = sub("propertyNames", raw)
	}
	count("minProperties", &n.minProps)
	count("maxProperties", &n.maxProps)
	deps := map[string]any{}
	for _, kw := range []string{"dependencies", "dependentRequired", "dependentSchemas"} {
		raw, ok := m[kw]
		if !ok {
			continue
		}
		obj, ok := raw.(map[string]any)
		if !ok {
			bad(kw, "%s must be an object", kw)
			continue
		}
		for _, prop := range sortedKeys(obj) {
			dv := obj[prop]
			if names, ok := stringList(dv); ok && kw != "dependentSchemas" {
				if n.depRequired == nil {
					n.depRequired = map[string][]string{}
				}
				n.depRequired[prop] = names
			} else if kw != "dependentRequired" {
				if n.depSchemas == nil {
					n.depSchemas = map[string]*schemaNode{}
				}
				n.depSchemas[prop] = c.sub(&errs, docURL, base, ptr+"/"+kw+"/"+escapePointer(prop), dv)
			} else {
				bad(kw, "%s of %q must be an array of strings", kw, prop)
			}
			if _, seen := deps[prop]; !seen {
				deps[prop] = nil
				n.dependentOrder = append(n.dependentOrder, prop)
			}
		}
	}
	if raw, ok := m["prefixItems"]; ok {
		n.prefixItems = subs("prefixItems", raw)
	}
	if raw, ok := m["items"]; ok {
		if arr, isTuple := raw.([]any); isTuple { // draft-07 tuple
			n.prefixItems = subs("items", arr)
			if add, ok := m["additionalItems"]; ok {
				n.items = sub("additionalItems", add)
			}
		} else {
			n.items = sub("items", raw)
		}
	}
	if raw, ok := m["contains"]; ok {
		n.contains = sub("contains", raw)
		count("minContains", &n.minContains)
		count("maxContains", &n.maxContains)
	}
	count("minItems", &n.minItems)
	count("maxItems", &n.maxItems)
	if raw, ok := m["uniqueItems"]; ok {
		b, isBool := raw.(bool)
		if !isBool {
			bad("uniqueItems", "uniqueItems must be a boolean")
		}
		n.unique = b
	}
	count("minLength", &n.minLength)
	count("maxLength", &n.maxLength)
	if raw, ok := m["pattern"]; ok {
		s, isString := raw.(string)
		re, err := regexp.Compile(s)
		switch {
		case !isString:
			bad("pattern", "pattern must be a string")
		case err != nil:
			bad("pattern", "pattern %q does not compile: %v", s, err)
		default:
			n.pattern = re
		}
	}
	if raw, ok := m["format"]; ok {
		s, isString := raw.(string)
		if !isString {
			bad("format", "format must be a string")
		}
		n.format = s
	}
	n.minimum, n.maximum = number("minimum"), number("maximum")
	n.multipleOf = number("multipleOf")
	if n.multipleOf != nil && n.multipleOf.Sign() <= 0 {
		bad("multipleOf", "multipleOf must be greater than 0")
	}
	for _, kw := range []string{"exclusiveMinimum", "exclusiveMaximum"} {
		raw, ok := m[kw]
		if !ok {
			continue
		}
		if b, isBool := raw.(bool); isBool { // draft-04: a flag on minimum/maximum
			if b && kw == "exclusiveMinimum" {
				n.exclMin, n.minimum = n.minimum, nil
			} else if b {
				n.exclMax, n.maximum = n.maximum, nil
			}
			continue
		}
		if kw == "exclusiveMinimum" {
			n.exclMin = number(kw)
		} else {
			n.exclMax = number(kw)
		}
	}
	return errors.Join(errs...)
}

func (c *compiler) sub(errs *[]error, docURL, base, ptr string, v any) *schemaNode {
	key := docURL + "#" + ptr
	if n, ok := c.nodes[key]; ok {
		return n
	}
	n := &schemaNode{}
	c.nodes[key] = n
	if err := c.fill(n, docURL, base, ptr, v); err != nil {
		*errs = append(*errs, err)
	}
	return n
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func stringList(v any) ([]string, bool) {
	arr, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func ratOf(v any) (*big.Rat, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(string(n))
	return r, ok
}

func nonNegativeInt(v any) (int, bool) {
	r, ok := ratOf(v)
	if !ok || !r.IsInt() || r.Sign() < 0 || !r.Num().IsInt64() || r.Num().Int64() > math.MaxInt32 {
		return 0, false
	}
	return int(r.Num().Int64()), true
}

func jsonTypeOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		if r, ok := ratOf(v); ok && r.IsInt() {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// validate checks v against n and returns its problems, each at the JSON
// pointer of the offending value, in the order the schema names them.
func (n *schemaNode) validate(v any) []Problem {
	var out []Problem
	n.check(v, nil, &out)
	return out
}

// valid reports whether v satisfies n, without gathering problems.
func (n *schemaNode) valid(v any, loc []string) bool {
	var out []Problem
	n.check(v, loc, &out)
	return len(out) == 0
}

// check appends v's problems under schema n to out. loc is the path to
// v, used as a stack: a child's path is loc with one more element
// appended in place (no copy), which is safe because nothing keeps loc
// past the call (a problem keeps pointer(loc), a string). Copying the
// path per property made a deep document cost its depth squared: a
// pipeline nested 500 deep allocated 790 MiB.
func (n *schemaNode) check(v any, loc []string, out *[]Problem) {
	add := func(format string, args ...any) {
		*out = append(*out, Problem{Field: pointer(loc), Message: fmt.Sprintf(format, args...)})
	}
	if n.always != nil {
		if !*n.always {
			add("false schema")
		}
		return
	}
	if n.ref != nil {
		n.ref.check(v, loc, out)
	}
	if len(n.types) > 0 {
		got := jsonTypeOf(v)
		if !slices.Contains(n.types, got) && !(got == "integer" && slices.Contains(n.types, "number")) {
			if got == "integer" {
				got = "number"
			}
			add("got %s, want %s", got, strings.Join(n.types, " or "))
		}
	}
	if n.enum != nil && !slices.ContainsFunc(n.enum, func(e any) bool { return valueEqual(e, v) }) {
		add("%s", enumMessage(n.enum))
	}
	if n.hasConst && !valueEqual(n.constV, v) {
		add("%s", enumMessage([]any{n.constV}))
	}
	switch v := v.(type) {
	case map[string]any:
		n.checkObject(v, loc, out)
	case []any:
		n.checkArray(v, loc, out)
	case string:
		n.checkString(v, loc, add)
	case json.Number:
		n.checkNumber(v, add)
	}
	for _, s := range n.allOf {
		s.check(v, loc, out)
	}
	if n.anyOf != nil {
		var all []Problem
		matched := false
		for _, s := range n.anyOf {
			var p []Problem
			s.check(v, loc, &p)
			if len(p) == 0 {
				matched = true
				break
			}
			all = append(all, p...)
		}
		if !matched {
			*out = append(*out, all...)
		}
	}
	if n.oneOf != nil {
		var all []Problem
		var matched []int
		for i, s := range n.oneOf {
			var p []Problem
			s.check(v, loc, &p)
			if len(p) == 0 {
				matched = append(matched, i)
			}
			all = append(all, p...)
		}
		switch {
		case len(matched) == 0 && len(all) > 0:
			*out = append(*out, all...)
		case len(matched) == 0:
			add("'oneOf' failed, none matched")
		case len(matched) > 1:
			add("'oneOf' failed, subschemas %d, %d matched", matched[0], matched[1])
		}
	}
	if n.not != nil && n.not.valid(v, loc) {
		add("'not' failed")
	}
	if n.ifS != nil {
		if n.ifS.valid(v, loc) {
			if n.then != nil {
				n.then.check(v, loc, out)
			}
		} else if n.els != nil {
			n.els.check(v, loc, out)
		}
	}
}

func (n *schemaNode) checkObject(v map[string]any, loc []string, out *[]Problem) {
	add := func(format string, args ...any) {
		*out = append(*out, Problem{Field: pointer(loc), Message: fmt.Sprintf(format, args...)})
	}
	if len(v) < n.minProps {
		add("minProperties: got %d, want %d", len(v), n.minProps)
	}
	if n.maxProps >= 0 && len(v) > n.maxProps {
		add("maxProperties: got %d, want %d", len(v), n.maxProps)
	}
	var missing []string
	for _, r := range n.required {
		if _, ok := v[r]; !ok {
			missing = append(missing, r)
		}
	}
	switch len(missing) {
	case 0:
	case 1:
		add("missing property %s", quote(missing[0]))
	default:
		add("missing properties %s", joinQuoted(missing))
	}
	for _, prop := range n.dependentOrder {
		if _, ok := v[prop]; !ok {
			continue
		}
		var miss []string
		for _, r := range n.depRequired[prop] {
			if _, ok := v[r]; !ok {
				miss = append(miss, r)
			}
		}
		if len(miss) > 0 {
			add("properties %s required, if %s exists", joinQuoted(miss), quote(prop))
		}
		if s := n.depSchemas[prop]; s != nil {
			s.check(v, loc, out)
		}
	}
	names := make([]string, 0, len(v))
	for k := range v {
		names = append(names, k)
	}
	sort.Strings(names)
	var extra []string
	for _, k := range names {
		at := append(loc, k)
		evaluated := false
		if s, ok := n.properties[k]; ok {
			evaluated = true
			s.check(v[k], at, out)
		}
		for _, ps := range n.patternProps {
			if ps.re.MatchString(k) {
				evaluated = true
				ps.s.check(v[k], at, out)
			}
		}
		if !evaluated && n.additional != nil {
			if a := n.additional.always; a != nil && !*a {
				extra = append(extra, k)
			} else {
				n.additional.check(v[k], at, out)
			}
		}
		if n.propertyNames != nil && !n.propertyNames.valid(k, loc) {
			add("invalid propertyName %s", quote(k))
		}
	}
	if len(extra) > 0 {
		add("additional properties %s not allowed", joinQuoted(extra))
	}
}

func (n *schemaNode) checkArray(v []any, loc []string, out *[]Problem) {
	add := func(format string, args ...any) {
		*out = append(*out, Problem{Field: pointer(loc), Message: fmt.Sprintf(format, args...)})
	}
	if len(v) < n.minItems {
		add("minItems: got %d, want %d", len(v), n.minItems)
	}
	if n.maxItems >= 0 && len(v) > n.maxItems {
		add("maxItems: got %d, want %d", len(v), n.maxItems)
	}
	if n.unique && len(v) > 1 {
		first := make(map[string]int, len(v))
		for i, item := range v {
			k := canonical(item)
			if j, seen := first[k]; seen {
				add("items at %d and %d are equal", j, i)
				break
			}
			first[k] = i
		}
	}
	for i, item := range v {
		at := append(loc, strconv.Itoa(i))
		switch {
		case i < len(n.prefixItems):
			n.prefixItems[i].check(item, at, out)
		case n.items != nil:
			n.items.check(item, at, out)
		}
	}
	if n.contains != nil {
		var matched []int
		for i, item := range v {
			if n.contains.valid(item, append(loc, strconv.Itoa(i))) {
				matched = append(matched, i)
			}
		}
		switch {
		case len(matched) < n.minContains && len(matched) == 0 && n.minContains == 1:
			add("no items match contains schema")
		case len(matched) < n.minContains && len(matched) == 0:
			add("min %d items required to match contains schema, but none matched", n.minContains)
		case len(matched) < n.minContains:
			add("min %d items required to match contains schema, but matched %d items at %v", n.minContains, len(matched), joinInts(matched))
		case n.maxContains >= 0 && len(matched) > n.maxContains:
			add("max %d items required to match contains schema, but matched %d items at %v", n.maxContains, len(matched), joinInts(matched))
		}
	}
}

func (n *schemaNode) checkString(s string, loc []string, add func(string, ...any)) {
	if n.minLength > 0 || n.maxLength >= 0 {
		l := utf8.RuneCountInString(s)
		if l < n.minLength {
			add("minLength: got %d, want %d", l, n.minLength)
		}
		if n.maxLength >= 0 && l > n.maxLength {
			add("maxLength: got %d, want %d", l, n.maxLength)
		}
	}
	if n.pattern != nil && !n.pattern.MatchString(s) {
		add("%s does not match pattern %s", quote(s), quote(n.pattern.String()))
	}
	if n.format != "" {
		if err := checkFormat(n.format, s); err != nil {
			add("%s is not valid %s: %v", quote(s), n.format, err)
		}
	}
}

func (n *schemaNode) checkNumber(num json.Number, add func(string, ...any)) {
	r, ok := ratOf(num)
	if !ok {
		return
	}
	f := func(x *big.Rat) float64 { v, _ := x.Float64(); return v }
	if n.minimum != nil && r.Cmp(n.minimum) < 0 {
		add("minimum: got %v, want %v", f(r), f(n.minimum))
	}
	if n.maximum != nil && r.Cmp(n.maximum) > 0 {
		add("maximum: got %v, want %v", f(r), f(n.maximum))
	}
	if n.exclMin != nil && r.Cmp(n.exclMin) <= 0 {
		add("exclusiveMinimum: got %v, want %v", f(r), f(n.exclMin))
	}
	if n.exclMax != nil && r.Cmp(n.exclMax) >= 0 {
		add("exclusiveMaximum: got %v, want %v", f(r), f(n.exclMax))
	}
	if n.multipleOf != nil && !new(big.Rat).Quo(r, n.multipleOf).IsInt() {
		add("multipleOf: got %v, want %v", f(r), f(n.multipleOf))
	}
}

// canonical writes a decoded JSON value so that two values are equal
// exactly when their canonical forms are: numbers by value, object keys
// sorted. uniqueItems compares items by it in one pass.
func canonical(v any) string {
	var b strings.Builder
	writeCanonical(&b, v)
	return b.String()
}

func writeCanonical(b *strings.Builder, v any) {
	switch v := v.(type) {
	case json.Number:
		if r, ok := ratOf(v); ok {
			b.WriteString("n" + r.RatString() + ";")
		} else {
			b.WriteString("n" + string(v) + ";")
		}
	case string:
		b.WriteString(strconv.Quote(v))
	case []any:
		b.WriteByte('[')
		for _, e := range v {
			writeCanonical(b, e)
			b.WriteByte(',')
		}
		b.WriteByte(']')
	case map[string]any:
		b.WriteByte('{')
		for _, k := range sortedKeys(v) {
			b.WriteString(strconv.Quote(k) + ":")
			writeCanonical(b, v[k])
			b.WriteByte(',')
		}
		b.WriteByte('}')
	default:
		fmt.Fprint(b, v) // true, false, <nil>
	}
}

// valueEqual compares decoded JSON values, numbers by value.
func valueEqual(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		bn, ok := b.(json.Number)
		if !ok {
			return false
		}
		ra, okA := ratOf(a)
		rb, okB := ratOf(bn)
		return okA && okB && ra.Cmp(rb) == 0
	case []any:
		bs, ok := b.([]any)
		return ok && slices.EqualFunc(a, bs, valueEqual)
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, av := range a {
			bv, ok := bm[k]
			if !ok || !valueEqual(av, bv) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

func enumMessage(want []any) string {
	parts := make([]string, 0, len(want))
	for _, w := range want {
		switch w := w.(type) {
		case []any, map[string]any:
			if len(want) == 1 {
				return "'const' failed"
			}
			return "'enum' failed"
		case string:
			parts = append(parts, quote(w))
		case nil:
			parts = append(parts, "<nil>")
		default:
			parts = append(parts, fmt.Sprint(w))
		}
	}
	if len(parts) == 1 {
		return "value must be " + parts[0]
	}
	return "value must be one of " + strings.Join(parts, ", ")
}

// quote writes s in single quotes, as the problems name values.
func quote(s string) string {
	q := strconv.Quote(s)
	q = strings.ReplaceAll(q[1:len(q)-1], `\"`, `"`)
	return "'" + strings.ReplaceAll(q, `'`, `\'`) + "'"
}

func joinQuoted(names []string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = quote(n)
	}
	return strings.Join(parts, ", ")
}

func joinInts(is []int) string {
	parts := make([]string, len(is))
	for i, v := range is {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, " ")
}
