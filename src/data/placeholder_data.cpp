// (placeholder so the target has a source until the layer's files land)
