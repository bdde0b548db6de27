"""The words place names are made of, for the offline extractor: what a place's name ends or
starts with, its number words, the regions a town is said with, and a name made like a place's.
Shared by the name rules (`names.py`: such a name is no person) and the place rules (`places.py`)."""
from __future__ import annotations

import re

PLACE_NOUNS = frozenset("""
Harbor Harbour Port Tower Forest Woods Wood Inn Tavern Castle Keep Fort Fortress City Town Village
Temple Shrine Church Cathedral Abbey Monastery Market Bazaar Square Academy School University
College Library Palace Hall Mountain Mountains Mount Peak Hill Hills Valley River Lake Sea Ocean
Bay Coast Beach Island Isle Isles Desert Swamp Marsh Cave Caves Mine Mines Ruins Bridge Gate Street
Road Avenue Park Garden Gardens Museum Hospital Station Airport Cafe Café Restaurant Bar Club
Kingdom Empire Republic Province Realm Capital District Quarter Manor Estate Farm Camp Outpost
Citadel Dungeon Crypt Tomb Arena Theater Theatre Studio Office Center Centre Mall Hotel Chapel
Oak Grove Falls Junction Infirmary Archive Archives Vault Sanctum Spire Canyon Cliffs Glacier
Lighthouse Docks Pier Wharf Plaza Arcade Prison Jail Barracks Tavern Alley Lane Springs Well
Mill Hold Deep Ward Wing Cellar Study Bay Quarters Deck Bridge Lab Laboratory Clinic
Bend House Diner Hardware Store Shop Motel Lodge Pass Ridge Crest Heights Crossing Lock Stair Stairs
Basin Fen Moor Heath Glen Creek Shed Bakery Pharmacy Garage Warehouse Depot Terminal Landing
Boulevard Trail Highway Route Summit Gorge Ravine Cove Priory Cloister Ossuary Scriptorium Hut Cabin
Cottage Barn Saloon Emporium Grocery Row Mews
Rock Rocks Crag Butte Mesa Gulch Flats Hollow Knoll Meadow Meadows Fork Ford Ranch Mission Orchard
Airlock Hangar Module Sector Berth Dock Concourse Atrium Annex Medbay Sickbay Room Suite
Chamber Chambers Gallery Ferry Fairgrounds
""".split())
# More words a place's name ends in, and words that open one ("Mount Vael", "Isla Candela", "Torre
# Blanca"): a name made so is no person, though these alone do not make a place.
PLACE_LAST = PLACE_NOUNS | frozenset("""
Quay Quays Shoal Shoals Cay Cays Reef Reefs Atoll Lagoon Sound Strait Straits Passage Point Sands Narrows
Bluff Marina Anchorage Shipyard Dockyard Rest
""".split())
# "Deck Nine", "Sector Seven": a place's kind and its number, spelled out
NUMBER_WORDS = frozenset("""
One Two Three Four Five Six Seven Eight Nine Ten Eleven Twelve Thirteen Fourteen Fifteen Sixteen
Seventeen Eighteen Nineteen Twenty
""".split())
SPELLED_NUMBER = re.compile(rf"\b([A-Z][a-z]+) (?:{'|'.join(sorted(NUMBER_WORDS, key=len, reverse=True))})\b")
PLACE_FIRST = frozenset("""
Mount Lake Fort Port Cape Isla Isle Torre Puerto Porto Castillo Monte Playa Cerro Bahía Bahia Loch Lough
Mont Lac Ciudad
""".split())
# "Scranbury, Pennsylvania": a town, then the state or country it is in.
REGIONS = ("Alabama|Alaska|Arizona|Arkansas|California|Colorado|Connecticut|Delaware|Florida|Georgia|Hawaii|"
           "Idaho|Illinois|Indiana|Iowa|Kansas|Kentucky|Louisiana|Maine|Maryland|Massachusetts|Michigan|"
           "Minnesota|Mississippi|Missouri|Montana|Nebraska|Nevada|New Hampshire|New Jersey|New Mexico|"
           "New York|North Carolina|North Dakota|Ohio|Oklahoma|Oregon|Pennsylvania|Rhode Island|"
           "South Carolina|South Dakota|Tennessee|Texas|Utah|Vermont|Virginia|Washington|West Virginia|"
           "Wisconsin|Wyoming|Ontario|Quebec|England|Scotland|Wales|Ireland|France|Italy|Spain|Germany")
IN_REGION = re.compile(rf"\b([A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+(?: [A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+)?), (?:{REGIONS})\b")
# Endings of towns' names, not people's: Galesburg, Pittsburgh, Peterborough, Indianapolis,
# Darmstadt, Leningrad; -ville only in a long word (Eddyville, Louisville; Neville is a name).
_TOWN_END = re.compile(r"[a-z](?:burg|burgh|borough|polis|stadt|grad)$|^[A-Z][a-z]{3,}ville$")


def made_like_a_place(name: str) -> bool:
    """A name made like a place's: "Gallows Quay", "Isla Candela", "Galesburg" (not "Mira" or
    "Rowan Vale")."""
    words = name.split()
    return words[-1] in PLACE_LAST or (len(words) > 1 and words[0] in PLACE_FIRST) \
        or (len(words) == 1 and _TOWN_END.search(name) is not None)
