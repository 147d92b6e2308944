"""Developer tools that generate committed files from nkic's own tables."""
