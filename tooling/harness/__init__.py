"""Run the real program offline under Pulumi's mocks and read what it registers (objects, program files, pins). May import: no other tooling."""
