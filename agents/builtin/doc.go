// Package builtin holds the agents that ship with agentmesh, one package
// each: image and document search, image analysis, folders, summaries, text
// transforms and YAML-defined prompt agents, plus the code they share
// (image features, the model interfaces, sample files). They are ordinary
// users of the SDK in package agents; nothing in the runtime knows them.
package builtin
