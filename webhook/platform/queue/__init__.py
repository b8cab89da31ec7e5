"""QueueAssignment: pods and jobs of a profile go into the profile's Kueue LocalQueue."""
