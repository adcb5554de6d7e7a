"""Apps of the virtual phone: each screen builds its view tree from the device state."""
