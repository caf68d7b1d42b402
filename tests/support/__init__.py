"""What the tests share besides fixtures (tests/conftest.py): fake package hosts on loopback
(fakehost, faulthost) and the wheels they serve (wheels), world builders shaped like the real
hosts of the examples (worlds, aitoolkit_world, invokeai_world, tgwui_world), local projects
(localproject, localprojects), hand-made lock sets (locksets), the bad-input catalogue
(bad_inputs), the whole-process trials (trials), the selector's samples (select_samples), and the
import graph reader the layering test uses (find_cycles)."""
