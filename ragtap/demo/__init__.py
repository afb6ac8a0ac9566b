"""The demo: the thesis's five worked examples (Figure 3.2), played by a scripted upstream through ragtap."""
