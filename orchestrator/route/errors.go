package route

import "errors"

// ErrMissingInput reports a required agent input that nothing can fill.
var ErrMissingInput = errors.New("required input has no source")

// ErrDeclaration reports data types an agent declared in its contract that
// the router could not learn (a conflict with a built-in or another
// agent's declaration, a schema that does not compile, an unknown merge
// rule).
var ErrDeclaration = errors.New("declared data types refused")
