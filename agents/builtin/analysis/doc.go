// Package analysis is the AnalysisAgent: it decodes images (JPEG, PNG, GIF,
// WebP), measures their pixel features and groups them into named categories
// (sunset, forest, seascape, night, snow, other). With a vision model
// configured it asks the model for labels and a caption instead, and says
// which method it used.
package analysis
