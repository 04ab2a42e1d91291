// Package layers holds, in its test, the directions the mesh's packages may
// import each other in (see layers_test.go): the layout is the
// architecture, and a new import against it fails the test.
package layers
