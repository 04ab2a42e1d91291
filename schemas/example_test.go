package schemas_test

import (
	"encoding/json"
	"fmt"

	"github.com/agentmesh/agentmesh/schemas"
)

func ExampleMerge() {
	found := schemas.FromIDs(schemas.ContentImages, "img-1", "img-2")
	more := schemas.FromIDs(schemas.ContentImages, "img-2", "img-3")
	all, _ := schemas.Merge(found, more)
	fmt.Println(all.IDs(), all.Count(), all.ContentType())
	// Output: [img-1 img-2 img-3] 3 images
}

func ExampleExecutionContext() {
	ec := schemas.NewExecutionContext(nil)
	_ = ec.Write("images", schemas.FromIDs(schemas.ContentImages, "a", "b"), schemas.TypeFileIDs, "ImageSearchAgent")
	images, _ := ec.Files("images")
	raw, _ := json.Marshal(images)
	fmt.Println(string(raw))
	// Output: {"ids":["a","b"],"content_type":"images","count":2}
}
