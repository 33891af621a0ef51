"""ComponentResources of tpu-serving. Type tokens are `tpu-serving:<module>:<Type>`."""
