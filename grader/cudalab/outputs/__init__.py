"""What grades and labs become for people: reports, published class results, the
student bundle's export and the rendered handouts.
"""
