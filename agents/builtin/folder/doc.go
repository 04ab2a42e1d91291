// Package folder is the FolderAgent: it puts each categorised file into a
// folder named after its category by setting the file's "folder" metadata in
// the object store. Running it twice changes nothing the second time.
package folder
